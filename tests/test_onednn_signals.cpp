// oneDNN 2.x's "gemm:jit" kernels move rsp onto the heap while they run: a
// signal handled meanwhile wrote its frame over the heap and malloc aborted
// later (Ctrl-C in a training loop on AVX2 CPUs). Run under
// ONEDNN_MAX_CPU_ISA=AVX2 (meson.build), so that these products take those
// kernels on any x86-64-v3 CPU, with a SIGALRM every 50 us handled on the
// calling thread or an OpenMP worker: the process survives, the handler runs
// and the values are those of float64.
#include <sys/time.h>

#include <csignal>
#include <dnnl.hpp>

#include "cpu/onednn/common.hpp"
#include "cpu/onednn/conv_primitive.hpp"
#include "cpu/onednn/signal_shield.hpp"
#include "support/check.hpp"
#include "support/fixed_threads.hpp"

using testing::uniform64;
namespace onednn = tpf::cpu::onednn;

namespace {

volatile std::sig_atomic_t g_alarms = 0;

/** SIGALRM every 50 us while alive, counted by a handler. */
class AlarmFlood {
 public:
  AlarmFlood() {
    struct sigaction action {};
    action.sa_handler = [](int) { g_alarms = g_alarms + 1; };
    sigaction(SIGALRM, &action, &saved_);
    const itimerval every{{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &every, nullptr);
  }
  ~AlarmFlood() {
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &saved_, nullptr);
  }

 private:
  struct sigaction saved_ {};
};

/** Whether oneDNN multiplies (m, k) by (k, n) with the kernels that move rsp.
 */
bool gemm_kernel_matmul(int64_t m, int64_t k, int64_t n) {
  using tag = dnnl::memory::format_tag;
  const auto md = [](int64_t r, int64_t c) {
    return dnnl::memory::desc({r, c}, dnnl::memory::data_type::f32, tag::ab);
  };
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(md(m, k), md(k, n), md(m, n)), onednn::engine());
  return onednn::moves_stack_pointer(pd);
}

}  // namespace

TEST_CASE("matmul on oneDNN's GEMM kernels survives a signal flood") {
  REQUIRE(gemm_kernel_matmul(250, 784, 10));
  const auto x = uniform64({250, 784});
  const auto w = uniform64({784, 10});
  const auto expected = tpf::matmul(x, w);
  const auto x32 = x.cast(tpf::float32), w32 = w.cast(tpf::float32);
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    testing::FixedThreads fixed(threads);
    g_alarms = 0;
    tpf::Tensor y;
    {
      AlarmFlood flood;
      for (int i = 0; i < 4000; ++i) y = tpf::matmul(x32, w32);
    }
    CHECK(g_alarms > 0);
    CHECK_CLOSE(y.cast(tpf::float64), expected, 1e-4, 1e-4);
  }
}

TEST_CASE("a filter gradient on oneDNN's GEMM kernels survives a flood") {
  // One input channel at stride 2: conv_primitive.cpp takes oneDNN's GEMM
  // filter gradient on plain layouts.
  const tpf::ConvAttrs attrs{{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1};
  REQUIRE(onednn::conv_primitive(onednn::ConvPass::grad_filter, attrs,
                                 {8, 1, 28, 28}, {16, 1, 5, 5}, {8, 16, 12, 12},
                                 false, false, 1)
              .shielded);
  const auto x = uniform64({8, 1, 28, 28});
  const auto filter = uniform64({16, 1, 5, 5});
  const auto filter_gradient = [&](const tpf::Tensor& xs,
                                   const tpf::Tensor& f) {
    tpf::GradientTape tape;
    tape.watch(f);
    const auto y = tpf::nn::conv2d(xs, f, {.strides = {2}});
    return tape.gradient(tpf::sum(y * y), {f})[0];
  };
  const auto expected = filter_gradient(x, filter);
  testing::FixedThreads fixed(1);
  g_alarms = 0;
  tpf::Tensor grad;
  {
    AlarmFlood flood;
    for (int i = 0; i < 300; ++i)
      grad = filter_gradient(x.cast(tpf::float32), filter.cast(tpf::float32));
  }
  CHECK(g_alarms > 0);
  CHECK_CLOSE(grad.cast(tpf::float64), expected, 1e-4, 1e-3);
}
