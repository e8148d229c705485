// tpf::data: a map + batch (+ prefetch) input pipeline feeding a consumer
// whose step takes longer than producing a batch. The step sleeps, as the
// host thread does while an accelerator runs the training step, and the map
// burns the CPU. With prefetch the next batch is ready when the step ends,
// so the wait per step should be ~0 and the step time ~kPipelineStepUs;
// without it every step also pays the map cost of a whole batch.
#include <chrono>
#include <thread>

#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tfbench {
namespace {

using Clock = std::chrono::steady_clock;

/** Burns the CPU for `us` microseconds (a decode, an augmentation). */
void spin_us(int64_t us) {
  const auto until = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < until) {
  }
}

}  // namespace

void tf_input_pipeline(benchmark::State& state, bool prefetch) {
  namespace data = tapeflow::data;
  auto images =
      data::range(0, 1 << 20)
          .repeat()
          .map([](const tapeflow::Tensor& i) {
            spin_us(kPipelineMapUs);
            return tapeflow::full({1, 28, 28}, double(i.item<int64_t>() % 255));
          })
          .batch(kPipelineBatch);
  if (prefetch) images = images.prefetch(2);
  auto it = images.make_iterator();
  it.get_next();  // starts the pipeline (and the prefetch thread)
  double waited = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto batch = it.get_next();
    waited +=
        std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    benchmark::DoNotOptimize(batch);
    std::this_thread::sleep_for(std::chrono::microseconds(kPipelineStepUs));
  }
  state.counters["wait_us"] = waited / double(state.iterations());
  state.counters["map_us_per_batch"] = double(kPipelineMapUs * kPipelineBatch);
  state.counters["step_us"] = double(kPipelineStepUs);
}

}  // namespace tfbench
