// oneDNN primitives run with the thread count their call asked for, even
// where OpenMP's own setting says more: a primitive keeps the thread count
// OpenMP gave when it was made, and the adaptation to load lowers tapeflow's
// count without touching OpenMP's. Before the kernels set OpenMP's count
// ahead of making their primitives, a convolution made for 1 thread under a
// setting of 2 ran 2 threads beside a busy process (a 1.35x slower CNN
// step). The test counts the threads of every OpenMP team started, through
// GNU OpenMP's entry point (oneDNN's parallel regions call it). A primitive
// run on fewer threads than it was made for waits at its own barriers
// forever: inside a caller's OpenMP region (run here), under OMP_DYNAMIC on
// a busy machine and under an OMP_THREAD_LIMIT below tapeflow's count (this
// file runs again under each, see meson.build).
#include <dlfcn.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

#include "support/check.hpp"

namespace {

std::atomic<unsigned> g_widest_team{0};

}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data,
                              unsigned num_threads, unsigned flags) {
  using Real = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static const Real real =
      reinterpret_cast<Real>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  const unsigned team =
      num_threads ? num_threads : static_cast<unsigned>(omp_get_max_threads());
  unsigned seen = g_widest_team.load();
  while (team > seen && !g_widest_team.compare_exchange_weak(seen, team)) {
  }
  real(fn, data, num_threads, flags);
}

TEST_CASE("oneDNN primitives made under a wider OpenMP setting run 1 thread") {
  namespace nn = tpf::nn;
  const int before = tpf::config::intra_op_threads();
  tpf::config::set_intra_op_threads(1);
  const auto x = testing::uniform64({8, 32, 14, 14}).cast(tpf::float32);
  const auto w = testing::uniform64({16, 32, 3, 3}).cast(tpf::float32);
  const auto a = testing::uniform64({512, 512}).cast(tpf::float32);
  const auto b = testing::uniform64({512, 512}).cast(tpf::float32);
  // OpenMP left at 2, as a load change leaves it; shapes no call made yet.
  omp_set_num_threads(2);
  g_widest_team = 0;
  tpf::GradientTape tape;
  tape.watch(x);
  tape.watch(w);
  const auto y = nn::conv2d(x, w, {.padding = {1, 1, 1, 1}});
  const auto pooled = nn::max_pool2d(y, {{3, 3}, {2, 2}});
  const auto grads = tape.gradient(tpf::sum(pooled), {x, w});
  CHECK(grads.size() == 2);
  CHECK(g_widest_team.load() <= 1);
  omp_set_num_threads(2);
  g_widest_team = 0;
  const auto c = tpf::matmul(a, b);
  CHECK(c.shape() == tpf::Shape{512, 512});
  CHECK(g_widest_team.load() <= 1);
  tpf::config::set_intra_op_threads(before);
}

TEST_CASE("oneDNN kernels called inside a caller's OpenMP region finish") {
  namespace nn = tpf::nn;
  const auto x = testing::uniform64({8, 32, 14, 14}).cast(tpf::float32);
  const auto w = testing::uniform64({16, 32, 3, 3}).cast(tpf::float32);
  const auto a = testing::uniform64({256, 256}).cast(tpf::float32);
  // The filter and input gradients of conv -> max pool, and a product.
  const auto results = [&] {
    tpf::GradientTape tape;
    tape.watch(x);
    tape.watch(w);
    const auto y = nn::conv2d(x, w, {.padding = {1, 1, 1, 1}});
    const auto pooled = nn::max_pool2d(y, {{3, 3}, {2, 2}});
    auto out = tape.gradient(tpf::sum(pooled), {x, w});
    out.push_back(tpf::matmul(a, a));
    return out;
  };
  const int before = tpf::config::intra_op_threads();
  tpf::config::set_intra_op_threads(2);
  const auto want = results();
  std::vector<std::vector<tpf::Tensor>> got(2);
  auto region = std::async(std::launch::async, [&] {
    omp_set_num_threads(2);
#pragma omp parallel num_threads(2)
    got[omp_get_thread_num()] = results();
  });
  if (region.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    // The region's threads cannot be joined: report and end here.
    std::fputs("oneDNN kernels in an OpenMP region did not finish in 60 s\n",
               stderr);
    std::_Exit(1);
  }
  int ran = 0;  // OMP_DYNAMIC or OMP_THREAD_LIMIT may give a team of 1
  for (const auto& one : got) {
    if (one.empty()) continue;
    ++ran;
    REQUIRE(one.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i)
      CHECK_CLOSE(one[i], want[i], 1e-5, 1e-5);
  }
  CHECK(ran >= 1);
  tpf::config::set_intra_op_threads(before);
}
