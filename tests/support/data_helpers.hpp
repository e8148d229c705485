#pragma once
// Helpers shared by the tpf::data tests.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.hpp"

namespace testing {

/** Every element of one epoch. */
template <class T>
std::vector<T> collect(const tapeflow::data::Dataset<T>& ds) {
  std::vector<T> out;
  for (auto& x : ds) out.push_back(std::move(x));
  return out;
}

/** The values of a dataset of int64 scalar tensors. */
inline std::vector<int64_t> ints(
    const tapeflow::data::Dataset<tapeflow::Tensor>& ds) {
  std::vector<int64_t> out;
  for (auto& x : ds) out.push_back(x.item<int64_t>());
  return out;
}

/** Checks that fn throws E whose message contains every part. */
template <class E>
void throws_with(const std::function<void()>& fn,
                 const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL("expected an exception");
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      CHECK_MESSAGE(msg.find(p) != std::string::npos, (msg + " lacks " + p));
  }
}

}  // namespace testing
