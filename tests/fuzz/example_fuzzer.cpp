// tf.train.Example parsing on arbitrary bytes: deserialize_example,
// parse_single_example and a batch parse_example with a spec that has every
// kind of feature. tpf::Error is the expected answer to bad input.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tapeflow/io/example.hpp"

namespace {

/** Equal, comparing floats by bits (NaN payloads must survive too). */
bool same(const tapeflow::io::Features& a, const tapeflow::io::Features& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.index() != ib->second.index())
      return false;
    if (const auto* fa = std::get_if<std::vector<float>>(&ia->second)) {
      const auto& fb = std::get<std::vector<float>>(ib->second);
      if (fa->size() != fb.size()) return false;
      if (!fa->empty() &&
          std::memcmp(fa->data(), fb.data(), fa->size() * sizeof(float)) != 0)
        return false;
    } else if (ia->second != ib->second) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace io = tapeflow::io;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  static const io::FeatureSpecs spec = {
      {"f", io::FixedLenFeature{tapeflow::float32, {2}, std::vector<float>{0}}},
      {"i", io::FixedLenFeature{tapeflow::int64, {}, std::vector<int64_t>{-1}}},
      {"b", io::FixedLenFeature{io::bytes, {1}, std::vector<std::string>{""}}},
      {"vf", io::VarLenFeature{tapeflow::float32}},
      {"vi", io::VarLenFeature{tapeflow::int64}},
      {"vb", io::VarLenFeature{io::bytes}},
  };
  try {
    const io::Features all = io::deserialize_example(bytes);
    // What parses re-serializes to something that parses to the same.
    if (!same(io::deserialize_example(io::serialize_example(all)), all))
      std::abort();
  } catch (const tapeflow::Error&) {
  }
  try {
    io::parse_single_example(bytes, spec);
  } catch (const tapeflow::Error&) {
  }
  try {
    io::parse_example(std::vector<std::string>{bytes, bytes}, spec);
  } catch (const tapeflow::Error&) {
  }
  return 0;
}
