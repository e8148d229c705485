// matmul (oneDNN float32, BLAS float64), matrix_inverse, matrix_determinant.
#include "support/check.hpp"

using testing::OpCase;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;

namespace {
/** Naive batched reference for (B, M, K) x (B, K, N). */
tpf::Tensor reference_matmul(const tpf::Tensor& a, const tpf::Tensor& b) {
  const int64_t B = a.shape()[0], M = a.shape()[1], K = a.shape()[2],
                N = b.shape()[2];
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> c(B * M * N, 0.0);
  for (int64_t s = 0; s < B; ++s)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k)
          c[(s * M + i) * N + j] +=
              va[(s * M + i) * K + k] * vb[(s * K + k) * N + j];
  return tpf::from_vector(c, {B, M, N});
}
}  // namespace

TEST_CASE("linalg ops: forward, strided, float32 and gradcheck") {
  const auto a = tpf::tensor({{1.0, 2.0}, {3.0, 4.0}});
  const auto b = tpf::tensor({{0.5, -1.0, 2.0}, {1.5, 0.0, -0.5}});
  const std::vector<OpCase> cases = {
      {"matmul",
       [](const Ts& in) { return tpf::matmul(in[0], in[1]); },
       {a, b},
       tpf::tensor({{3.5, -1.0, 1.0}, {7.5, -3.0, 4.0}})},
      {"matmul_transpose_a",
       [](const Ts& in) { return tpf::matmul(in[0], in[1], true); },
       {a, b},
       tpf::tensor({{5.0, -1.0, 0.5}, {7.0, -2.0, 2.0}})},
      {"matrix_inverse",
       [](const Ts& in) { return tpf::matrix_inverse(in[0]); },
       {a},
       tpf::tensor({{-2.0, 1.0}, {1.5, -0.5}})},
      {"matrix_determinant",
       [](const Ts& in) { return tpf::matrix_determinant(in[0]); },
       {a},
       tpf::scalar(-2.0, tpf::float64)},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("batched, transposed and composed matmul: OpCase rows") {
  auto draw = [](const tpf::Shape& shape, uint64_t seed) {
    return tpf::stateless_random_uniform(shape, seed, -1.0, 1.0, tpf::float64);
  };
  const auto a = draw({2, 3, 5, 4}, 1), b = draw({3, 4, 6}, 2);
  const auto b6 =
      tpf::reshape(tpf::broadcast_to(b, {2, 3, 4, 6}).contiguous(), {6, 4, 6});
  const auto p = draw({4, 3}, 3), q = draw({5, 4}, 4);
  const auto w = draw({8, 5}, 5), v = draw({5, 3}, 6), t = draw({8, 3}, 7);
  const std::vector<OpCase> cases = {
      {"matmul_batched_broadcast",
       [](const Ts& in) { return tpf::matmul(in[0], in[1]); },
       {a, b},
       tpf::reshape(reference_matmul(tpf::reshape(a, {6, 5, 4}), b6),
                    {2, 3, 5, 6})},
      {"matmul_transpose_both",
       [](const Ts& in) { return tpf::matmul(in[0], in[1], true, true); },
       {p, q},
       tpf::reshape(
           reference_matmul(
               tpf::reshape(tpf::transpose(p).contiguous(), {1, 3, 4}),
               tpf::reshape(tpf::transpose(q).contiguous(), {1, 4, 5})),
           {3, 5})},
      {"tanh_matmul_mse",
       [](const Ts& in) {
         return tpf::mean(
             tpf::square(tpf::tanh(tpf::matmul(in[0], in[1])) - in[2]));
       },
       {w, v, t},
       tpf::Tensor()},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("batched matmul broadcasts batch axes") {
  const auto a = uniform64({3, 4, 5});
  const auto b = uniform64({5, 2});
  const auto c = tpf::matmul(a, b);
  CHECK(c.shape() == tpf::Shape{3, 4, 2});
  const auto b3 = tpf::broadcast_to(b, {3, 5, 2}).contiguous();
  CHECK_CLOSE(c, reference_matmul(a, b3));
  CHECK_CLOSE(tpf::matmul(a.cast(tpf::float32), b.cast(tpf::float32))
                  .cast(tpf::float64),
              reference_matmul(a, b3), 1e-5, 1e-5);
  const auto why = testing::gradcheck(
      [](const Ts& in) { return tpf::matmul(in[0], in[1], false, true); },
      {uniform64({2, 3, 4}), uniform64({1, 5, 4})});
  CHECK_MESSAGE(why.empty(), why);
  const auto big = tpf::random_uniform({256, 128});
  const auto prod = tpf::matmul(big, big, false, true);
  CHECK(prod.shape() == tpf::Shape{256, 256});
  CHECK_CLOSE(prod, tpf::transpose(prod), 1e-5, 1e-4);
}

TEST_CASE("matmul on every operand layout, below and above the small bound") {
  // Products up to 64^3 multiply-adds run through LIBXSMM, larger ones through
  // oneDNN (float32) or BLAS (float64): each layout of each operand, a
  // leading dimension longer than the row or column, and a broadcast batch.
  auto draw = [](const tpf::Shape& shape, uint64_t seed) {
    return tpf::stateless_random_uniform(shape, seed, -1.0, 1.0, tpf::float64);
  };
  // An (rows, cols) operand with the same values in each layout.
  auto layouts = [&](int64_t rows, int64_t cols, uint64_t seed) {
    const auto wide = draw({rows, cols + 3}, seed);
    const auto m = tpf::slice(wide, {0, 0}, {rows, cols});  // ld = cols + 3
    const auto tall = tpf::transpose(draw({cols, rows + 2}, seed + 1));
    const auto t = tpf::slice(tall, {0, 0}, {rows, cols});  // column-major
    return std::vector<std::pair<const char*, tpf::Tensor>>{
        {"contiguous", m.contiguous()},
        {"row-major with a gap", m},
        {"column-major", tpf::transpose(tpf::transpose(t).contiguous())},
        {"column-major with a gap", t}};
  };
  // Below 16 columns and from 8 rows LIBXSMM computes C, not C^T, into a
  // buffer ({9, 1, 4}, {32, 10, 64}, {8, 15, 3}). The last two: a 2 KiB
  // leading dimension, which oneDNN's AVX2 GEMM reads unpacked, so the kernel
  // copies that operand to a longer one first.
  const int64_t shapes[][3] = {{32, 64, 64},  {1, 7, 5},    {9, 1, 4},
                               {32, 10, 64},  {8, 15, 3},   {7, 4, 9},
                               {64, 64, 64},  {65, 64, 64}, {70, 70, 70},
                               {33, 512, 40}, {512, 8, 70}};
  for (const auto& [M, N, K] : shapes) {
    for (const auto& [a_name, a] : layouts(M, K, 10)) {
      for (const auto& [b_name, b] : layouts(K, N, 20)) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CAPTURE(a_name);
        CAPTURE(b_name);
        const auto ref = tpf::reshape(
            reference_matmul(tpf::reshape(a.contiguous(), {1, M, K}),
                             tpf::reshape(b.contiguous(), {1, K, N})),
            {M, N});
        CHECK_CLOSE(tpf::matmul(a, b), ref, 1e-12, 1e-12);
        CHECK_CLOSE(tpf::matmul(a.cast(tpf::float32), b.cast(tpf::float32))
                        .cast(tpf::float64),
                    ref, 1e-5, 1e-5);
      }
    }
  }
  // A batch of 3 x 2 small products, b broadcast over the first axis; C^T
  // (5 rows) and C (9 rows) in LIBXSMM's terms.
  for (const int64_t rows : {5, 9}) {
    CAPTURE(rows);
    const auto a = draw({3, 2, rows, 4}, 30), b = draw({2, 4, 6}, 31);
    const auto b6 = tpf::reshape(
        tpf::broadcast_to(b, {3, 2, 4, 6}).contiguous(), {6, 4, 6});
    const auto ref = tpf::reshape(
        reference_matmul(tpf::reshape(a, {6, rows, 4}), b6), {3, 2, rows, 6});
    CHECK_CLOSE(tpf::matmul(a, b), ref, 1e-12, 1e-12);
    CHECK_CLOSE(tpf::matmul(a, tpf::transpose(b, {0, 2, 1}), false, true), ref,
                1e-12, 1e-12);
    CHECK_CLOSE(tpf::matmul(tpf::transpose(a, {0, 1, 3, 2}), b, true), ref,
                1e-12, 1e-12);
  }
}

TEST_CASE("batched inverse and determinant gradients") {
  const auto eye = tpf::eye(3, 3, tpf::float64);
  const auto x = uniform64({2, 3, 3}, -0.3, 0.3) + eye * 2.0;
  const auto inv = tpf::matrix_inverse(x);
  CHECK_CLOSE(tpf::matmul(x, inv), tpf::broadcast_to(eye, {2, 3, 3}), 1e-9,
              1e-9);
  for (auto fn :
       {testing::Fn([](const Ts& in) { return tpf::matrix_inverse(in[0]); }),
        testing::Fn(
            [](const Ts& in) { return tpf::matrix_determinant(in[0]); })}) {
    const auto why = testing::gradcheck(fn, {x});
    CHECK_MESSAGE(why.empty(), why);
  }
}

TEST_CASE("linalg errors") {
  CHECK_THROWS_AS(tpf::matmul(tpf::ones({2, 3}), tpf::ones({2, 3})),
                  tpf::ShapeError);
  CHECK_THROWS_AS(tpf::matmul(tpf::ones({3}), tpf::ones({3, 1})),
                  tpf::ShapeError);
  CHECK_THROWS_AS(tpf::matmul(tpf::tensor({{1, 2}}), tpf::tensor({{1}, {2}})),
                  tpf::DTypeError);
  CHECK_THROWS_AS(tpf::matrix_inverse(tpf::ones({2, 3})), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::matrix_inverse(tpf::ones({2, 2})), tpf::ValueError);
  CHECK(tpf::matrix_determinant(tpf::ones({2, 2})).item<double>() == 0.0);
  try {
    (void)tpf::matmul(tpf::ones({2, 3}), tpf::ones({2, 3}));
  } catch (const tpf::ShapeError& e) {
    CHECK(std::string(e.what()).rfind("[matmul]", 0) == 0);
  }
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::zeros64;
  const std::vector<OpCase> cases = {
      degenerate(
          "matmul_inner_zero",
          [](const Ts& in) { return tpf::matmul(in[0], in[1]); },
          {zeros64({2, 0}), zeros64({0, 3})}, zeros64({2, 3})),
      degenerate(
          "matmul_no_rows",
          [](const Ts& in) { return tpf::matmul(in[0], in[1]); },
          {zeros64({0, 2}), uniform64({2, 3})}, zeros64({0, 3})),
      degenerate(
          "matmul_empty_batch",
          [](const Ts& in) { return tpf::matmul(in[0], in[1]); },
          {zeros64({0, 2, 2}), zeros64({0, 2, 2})}, zeros64({0, 2, 2})),
      degenerate(
          "determinant_0x0_is_one",
          [](const Ts& in) { return tpf::matrix_determinant(in[0]); },
          {zeros64({0, 0})}, tpf::scalar(1.0, tpf::float64)),
      degenerate(
          "inverse_0x0",
          [](const Ts& in) { return tpf::matrix_inverse(in[0]); },
          {zeros64({0, 0})}, zeros64({0, 0})),
      degenerate(
          "determinant_empty_batch",
          [](const Ts& in) { return tpf::matrix_determinant(in[0]); },
          {zeros64({0, 3, 3})}, zeros64({0})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}
