// The tape: persistence, watching, accumulation, unconnected sources, nesting
// (higher order), custom gradients, deep chains and memory.
#include "support/check.hpp"

using Ts = std::vector<tpf::Tensor>;

TEST_CASE("a non-persistent tape answers once; a persistent one many times") {
  const auto x = tpf::tensor({3.0});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = x * x;
  CHECK_CLOSE(tape.gradient(y, {x})[0], tpf::tensor({6.0}));
  CHECK_THROWS_AS(tape.gradient(y, {x}), tpf::ValueError);

  tpf::GradientTape persistent(true);
  persistent.watch(x);
  const auto z = x * x * x;
  const auto w = x * 2.0;
  CHECK_CLOSE(persistent.gradient(z, {x})[0], tpf::tensor({27.0}));
  CHECK_CLOSE(persistent.gradient(w, {x})[0], tpf::tensor({2.0}));
}

TEST_CASE("variables are watched automatically; plain tensors are not") {
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  const auto c = tpf::tensor({5.0, 7.0});
  tpf::GradientTape tape;
  const auto loss = tpf::sum(w * c);
  const auto g = tape.gradient(loss, {w, c});
  CHECK_CLOSE(g[0], c);
  CHECK_FALSE(g[1].defined());
}

TEST_CASE("reused tensors and branches accumulate gradients") {
  const auto x = tpf::tensor({2.0, -1.0});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = tpf::sum(x * x + tpf::sin(x) + x);  // dy/dx = 2x + cos x + 1
  const auto expected = 2.0 * x + tpf::cos(x) + 1.0;
  CHECK_CLOSE(tape.gradient(y, {x})[0], expected);
}

TEST_CASE("unconnected sources give undefined or zeros as asked") {
  const auto x = tpf::tensor({1.0}), u = tpf::tensor({4.0, 5.0});
  tpf::GradientTape tape(true);
  tape.watch(x);
  tape.watch(u);
  const auto y = x * 3.0;
  CHECK_FALSE(tape.gradient(y, {u})[0].defined());
  const auto z = tape.gradient(y, {u}, {}, tpf::UnconnectedGradients::zero)[0];
  CHECK_CLOSE(z, tpf::zeros({2}, tpf::float64));
  const auto unrelated = tpf::tensor({1.0});
  CHECK_FALSE(tape.gradient(unrelated, {x})[0].defined());
}

TEST_CASE("output_gradients seed the target's gradient") {
  const auto x = tpf::tensor({1.0, 2.0});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = x * x;
  const auto g = tape.gradient(y, {x}, {tpf::tensor({10.0, 100.0})})[0];
  CHECK_CLOSE(g, tpf::tensor({20.0, 400.0}));
}

TEST_CASE("output_gradients of another dtype count in the target's") {
  // Fused gradient ops (tanh_grad, sigmoid_grad, relu_grad) read the seed
  // in the output's dtype: a float64 seed for a float32 target and back.
  const double v[] = {0.5, -1.25, 2.0};
  for (tpf::Tensor (*f)(const tpf::Tensor&) :
       {&tpf::tanh, &tpf::sigmoid, &tpf::relu}) {
    for (const auto& [x_type, seed_type] :
         {std::pair{tpf::float32, tpf::float64},
          std::pair{tpf::float64, tpf::float32}}) {
      const auto x = tpf::tensor({v[0], v[1], v[2]}).cast(x_type);
      const auto seed = tpf::tensor({1.0, 10.0, 100.0}).cast(seed_type);
      tpf::GradientTape tape;
      tape.watch(x);
      const auto g = tape.gradient(f(x), {x}, {seed})[0];
      tpf::GradientTape reference;
      reference.watch(x);
      const auto want =
          reference.gradient(tpf::sum(f(x) * seed.cast(x_type)), {x})[0];
      CHECK(g.dtype() == x_type);
      CHECK_CLOSE(g.cast(tpf::float64), want.cast(tpf::float64), 1e-6, 1e-6);
    }
  }
}

TEST_CASE("nested tapes give second derivatives") {
  SUBCASE("x^3 -> 6x") {
    const auto x = tpf::tensor({2.0, -3.0});
    tpf::GradientTape outer;
    outer.watch(x);
    tpf::Tensor dy;
    {
      tpf::GradientTape inner;
      inner.watch(x);
      dy = inner.gradient(x * x * x, {x})[0];
    }
    CHECK_CLOSE(dy, tpf::tensor({12.0, 27.0}));
    CHECK_CLOSE(outer.gradient(dy, {x})[0], tpf::tensor({12.0, -18.0}));
  }
  SUBCASE("tanh'' = -2 tanh (1 - tanh^2)") {
    const auto x = tpf::tensor({0.3, -0.8});
    tpf::GradientTape outer;
    outer.watch(x);
    tpf::Tensor dy;
    {
      tpf::GradientTape inner;
      inner.watch(x);
      dy = inner.gradient(tpf::tanh(x), {x})[0];
    }
    const auto t = tpf::tanh(x);
    CHECK_CLOSE(outer.gradient(dy, {x})[0], -2.0 * t * (1.0 - t * t));
  }
  SUBCASE("matmul chain: gradcheck of the first-order gradient") {
    const auto fn = [](const Ts& in) {
      tpf::GradientTape inner;
      inner.watch(in[0]);
      const auto y =
          tpf::sum(tpf::tanh(tpf::matmul(tpf::matmul(in[0], in[1]), in[0])));
      return inner.gradient(y, {in[0]})[0];
    };
    const auto why = testing::gradcheck(
        fn, {testing::uniform64({3, 3}), testing::uniform64({3, 3})});
    CHECK_MESSAGE(why.empty(), why);
  }
}

TEST_CASE("stop_gradient and NoGradGuard block recording") {
  const auto x = tpf::tensor({2.0});
  tpf::GradientTape tape(true);
  tape.watch(x);
  const auto y = x * tpf::stop_gradient(x);
  CHECK_CLOSE(tape.gradient(y, {x})[0], tpf::tensor({2.0}));
  tpf::Tensor z;
  {
    tpf::NoGradGuard guard;
    z = x * x;
  }
  CHECK_FALSE(tape.gradient(z, {x})[0].defined());
}

TEST_CASE("custom_gradient replaces the rule of the wrapped computation") {
  const auto x = tpf::tensor({1.0, 2.0});
  tpf::GradientTape tape;
  tape.watch(x);
  // Forward: x^2; declared gradient: 10 * dy (deliberately not 2x).
  const auto y = tpf::custom_gradient(
      [](const Ts& in) {
        return tpf::CustomResult{{in[0] * in[0]},
                                 [](const Ts& g) { return Ts{g[0] * 10.0}; }};
      },
      {x})[0];
  CHECK_CLOSE(y, tpf::tensor({1.0, 4.0}));
  CHECK_CLOSE(tape.gradient(tpf::sum(y), {x})[0], tpf::tensor({10.0, 10.0}));
}

TEST_CASE("custom_gradient refuses a gradient that does not fit its input") {
  const auto x = tpf::tensor({1.0, 2.0});
  auto run = [&](std::function<Ts(const Ts&)> grad) {
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = tpf::custom_gradient(
        [&](const Ts& in) {
          return tpf::CustomResult{{in[0] * 2.0}, grad};
        },
        {x})[0];
    return tape.gradient(tpf::sum(y), {x})[0];
  };
  // Summed to fit before: a (3, 2) gradient for a (2,) input.
  CHECK_THROWS_WITH_AS(
      run([](const Ts&) {
        return Ts{tpf::ones({3, 2}, tpf::float64)};
      }),
      "[custom_gradient] expected the gradient of input 0 to have its shape "
      "(2,), got (3, 2)",
      tpf::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([](const Ts&) { return Ts{tpf::ones({2}, tpf::float32)}; }),
      "[custom_gradient] expected the gradient of input 0 to have its dtype "
      "float64, got float32",
      tpf::DTypeError);
  // No gradient for an input is allowed: it reads as zero.
  CHECK_FALSE(run([](const Ts&) { return Ts{tpf::Tensor()}; }).defined());
}

TEST_CASE("a 100,000-op chain differentiates without deep recursion") {
  const auto x = tpf::tensor({1.0});
  tpf::GradientTape tape;
  tape.watch(x);
  tpf::Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 1e-5;
  CHECK(tape.size() >= 100000);
  CHECK_CLOSE(tape.gradient(y, {x})[0], tpf::tensor({1.0}));
}

TEST_CASE("memory returns to its baseline when a tape is done") {
  const auto x = tpf::random_normal({256, 256}, 0.0, 1.0, tpf::float64);
  const size_t before = tpf::memory_stats().allocated_bytes;
  {
    tpf::GradientTape tape;
    tape.watch(x);
    auto y = x;
    for (int i = 0; i < 20; ++i) y = tpf::tanh(y) * 1.01;
    const auto g = tape.gradient(tpf::sum(y), {x});
    CHECK(g[0].defined());
  }
  CHECK(tpf::memory_stats().allocated_bytes == before);
}

TEST_CASE("10,000 training steps run in constant memory") {
  tpf::Variable w(tpf::random_normal({16, 4}));
  tpf::Variable b(tpf::zeros({4}));
  const auto xs = tpf::random_normal({32, 16});
  const auto target = tpf::random_normal({32, 4});
  auto step = [&] {
    tpf::GradientTape tape;
    const auto pred = tpf::matmul(xs, w) + b;
    const auto loss = tpf::mean(tpf::square(pred - target));
    const auto g = tape.gradient(loss, {w, b});
    w.assign_sub(g[0] * 0.01);
    b.assign_sub(g[1] * 0.01);
    return loss.item<double>();
  };
  const double first = step();
  const tpf::MemoryStats start = tpf::memory_stats();
  double last = first;
  for (int i = 0; i < 10000; ++i) last = step();
  const tpf::MemoryStats end = tpf::memory_stats();
  CHECK(end.allocated_bytes == start.allocated_bytes);
  CHECK(end.num_fresh == start.num_fresh);  // every block came from the cache
  CHECK(last < first);
}

TEST_CASE("gradient() takes a model's Variables as they come") {
  tpf::nn::Dense dense(2, {.input_dim = 3});
  tpf::GradientTape tape;
  const auto loss = tpf::sum(dense(tpf::ones({4, 3})));
  const auto grads = tape.gradient(loss, dense.parameters());
  REQUIRE(grads.size() == 2);
  CHECK_CLOSE(grads[0], tpf::full({3, 2}, 4.0));
  CHECK_CLOSE(grads[1], tpf::full({2}, 4.0));
}

TEST_CASE("gradient of a Variable with respect to itself is ones") {
  tpf::Variable v(tpf::tensor({1.0, 2.0}));
  tpf::GradientTape tape;
  const std::vector<tpf::Tensor> g = tape.gradient(v, {v});
  REQUIRE(g[0].defined());
  CHECK(g[0].to_vector<double>() == std::vector<double>{1.0, 1.0});
  // A Variable the target does not reach stays unconnected.
  tpf::Variable other(tpf::tensor({3.0}));
  tpf::GradientTape second;
  CHECK_FALSE(second.gradient(v * 2.0, {other})[0].defined());
}
