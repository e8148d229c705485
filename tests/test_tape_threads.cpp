// Tapes and threads. A tape records the ops of the thread that made it (as in
// TensorFlow); it may be destroyed, or asked for gradients, on any other
// thread. Built twice: as a plain test and under ThreadSanitizer (tape_tsan).
#include <doctest/doctest.h>

#include <cmath>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace {

std::vector<double> values(const tpf::Tensor& t) {
  return t.to_vector<double>();
}

}  // namespace

TEST_CASE("a tape destroyed on another thread stops recording; no corruption") {
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  auto tape = std::make_unique<tpf::GradientTape>();
  tpf::GradientTape survivor;
  (void)(w * w);
  CHECK(tape->size() == 1);
  std::thread([&] { tape.reset(); }).join();
  // This thread drops the abandoned tape at its next op and keeps recording
  // on the tapes it still has.
  for (int i = 0; i < 3; ++i) (void)(w * w);
  CHECK(survivor.size() == 4);
  tpf::GradientTape fresh;
  const auto y = tpf::sum(w * w);
  CHECK(fresh.size() == 2);
  CHECK(values(fresh.gradient(y, {w})[0]) == std::vector<double>{2.0, 4.0});
}

TEST_CASE("tapes handed to another thread to destroy, many times") {
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  std::vector<std::unique_ptr<tpf::GradientTape>> made;
  for (int i = 0; i < 50; ++i) {
    made.push_back(std::make_unique<tpf::GradientTape>(true));
    (void)tpf::sum(w * w);
  }
  std::thread([&] { made.clear(); }).join();
  tpf::GradientTape tape;
  const auto y = tpf::sum(w * w);
  CHECK(tape.size() == 2);
  CHECK(values(tape.gradient(y, {w})[0]) == std::vector<double>{2.0, 4.0});
}

TEST_CASE("gradient() on another thread than the one that recorded") {
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  tpf::GradientTape tape(true);
  const auto y = tpf::sum(w * w * w);
  for (int i = 0; i < 2; ++i) {
    auto g = std::async(std::launch::async,
                        [&] { return tape.gradient(y, {w})[0]; });
    CHECK(values(g.get()) == std::vector<double>{3.0, 12.0});
  }
  // The backward ops ran on the other thread: nothing new was recorded here.
  CHECK(tape.size() == 3);
}

TEST_CASE("ops on another thread are not recorded on this thread's tape") {
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  tpf::GradientTape tape;
  std::thread([&] {
    (void)(w * w);
    tpf::GradientTape own;
    const auto y = tpf::sum(w * w);
    CHECK(own.size() == 2);
    CHECK(values(own.gradient(y, {w})[0]) == std::vector<double>{2.0, 4.0});
  }).join();
  CHECK(tape.size() == 0);
}

TEST_CASE("threads recording on their own tapes at once, sharing a variable") {
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        tpf::GradientTape tape;
        const auto y = tpf::sum(w * w * static_cast<double>(t + 1));
        const auto g = values(tape.gradient(y, {w})[0]);
        wrong[t] += g != std::vector<double>{2.0 * (t + 1), 4.0 * (t + 1)};
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == std::vector<int>(4, 0));
}

TEST_CASE("threads training shared variables with one optimizer (Hogwild)") {
  // Each update moves w and b to fresh buffers while other threads' tapes
  // hold the old ones: a tape saving them meanwhile must read the handle
  // whole (it took half of a move: "modified by an in-place operation"),
  // must not copy it between a writer's check and its version bump (the
  // same error, one run in fifteen), and a kernel reading the old buffer
  // must hold it while the tape that pinned it goes (a double free).
  tpf::Variable w(tpf::fill({16, 16}, 0.5f)), b(tpf::zeros({16}));
  tpf::optim::SGD sgd(1e-3);
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        try {
          tpf::GradientTape tape;
          const auto y = tpf::matmul(tpf::ones({4, 16}), w) + b;
          const auto grads = tape.gradient(tpf::mean(y * y), {w, b});
          sgd.apply_gradients(grads, {w, b});
        } catch (const tpf::Error&) {
          ++failures[t];
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(failures == std::vector<int>(8, 0));
  for (double v : values(w)) CHECK(std::isfinite(v));
}

TEST_CASE("threads sharing one Adam from its first step (Hogwild)") {
  // Every thread's first step finds no slots for these parameters and makes
  // them: the optimizer's table grew under the others' feet (a heap
  // corruption one run in five with the case above) and lost steps.
  constexpr int kParams = 24, kThreads = 8, kSteps = 20;
  std::vector<tpf::Variable> params;
  for (int p = 0; p < kParams; ++p) params.emplace_back(tpf::zeros({8}));
  const std::vector<tpf::Tensor> grads(kParams, tpf::ones({8}));
  tpf::optim::Adam adam(1e-3);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) adam.apply_gradients(grads, params);
    });
  for (auto& th : threads) th.join();
  CHECK(adam.iterations() == kThreads * kSteps);
  CHECK(adam.variables().size() == kParams);
  CHECK(adam.slots().size() == 2 * kParams);
  for (const auto& p : params)
    for (double v : values(p)) CHECK(v < 0);
}

TEST_CASE("threads calling one new model at once build it once") {
  // Every first call built the layers: threads ran on weights the next
  // build replaced, and the weight list grew under the others' feet.
  for (int round = 0; round < 20; ++round) {
    tpf::nn::Sequential model;
    model.add(tpf::nn::Dense(8));
    model.add(tpf::nn::Dense(1));
    const auto x = tpf::ones({2, 4});
    std::vector<std::vector<double>> outputs(8);
    std::vector<int> failures(8, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        try {
          outputs[t] = values(model(x));
        } catch (const tpf::Error&) {
          ++failures[t];
        }
      });
    for (auto& th : threads) th.join();
    CHECK(failures == std::vector<int>(8, 0));
    CHECK(model.named_variables().size() == 4);
    for (const auto& out : outputs) CHECK(out == values(model(x)));
  }
}

TEST_CASE("a tape made on one thread and destroyed by a consumer thread") {
  tpf::Variable w(tpf::tensor({3.0}));
  std::promise<std::unique_ptr<tpf::GradientTape>> handoff;
  auto received = handoff.get_future();
  std::thread consumer([&] {
    auto tape = received.get();
    CHECK(tape->size() == 1);
    tape.reset();
  });
  auto tape = std::make_unique<tpf::GradientTape>();
  (void)(w * w);
  handoff.set_value(std::move(tape));
  consumer.join();
  // The producer keeps running ops (and recording on new tapes).
  for (int i = 0; i < 10; ++i) {
    tpf::GradientTape next;
    const auto y = w * w;
    CHECK(values(next.gradient(y, {w})[0]) == std::vector<double>{6.0});
  }
}
