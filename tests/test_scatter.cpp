// gather_nd, scatter_nd, tensor_scatter_nd_add / _update and the segment
// sums: OpCase rows (forward by hand, strided, float32, float64 gradcheck,
// devices), integer dtypes and repeated tuples on every device against loops
// written here, and errors.
#include <random>

#include "support/check.hpp"
#include "support/device.hpp"

using testing::all_devices;
using testing::degenerate;
using testing::OpCase;
using Ts = std::vector<tpf::Tensor>;

namespace {

/** int64 index tuples on the device of `like` (an OpCase input). */
tpf::Tensor tuples(std::initializer_list<std::initializer_list<int64_t>> rows,
                   const tpf::Tensor& like) {
  return tpf::tensor<int64_t>(rows).to(like.device());
}
tpf::Tensor ids(std::initializer_list<int64_t> values,
                const tpf::Tensor& like) {
  return tpf::tensor<int64_t>(values).to(like.device());
}

tpf::Tensor x34() {
  return tpf::tensor({{0.5, -1.25, 2.0, 3.5},
                      {1.5, 0.25, -0.75, 4.0},
                      {-2.0, 6.0, 0.125, -3.0}});
}

}  // namespace

TEST_CASE("gather_nd, scatter_nd and segment sums: OpCase rows") {
  const tpf::Tensor x = x34();
  const std::vector<OpCase> cases = {
      {"gather_nd_elements",
       [](const Ts& in) {
         return tpf::gather_nd(in[0], tuples({{0, 1}, {2, 3}, {0, 1}}, in[0]));
       },
       {x},
       tpf::tensor({-1.25, -3.0, -1.25})},  // a repeated tuple: grads add
      {"gather_nd_rows",
       [](const Ts& in) {
         return tpf::gather_nd(in[0], tuples({{2}, {0}}, in[0]));
       },
       {x},
       tpf::tensor({{-2.0, 6.0, 0.125, -3.0}, {0.5, -1.25, 2.0, 3.5}})},
      {"scatter_nd_rows_repeated",
       [](const Ts& in) {
         return tpf::scatter_nd(tuples({{1}, {3}, {1}}, in[0]), in[0], {4, 2});
       },
       {tpf::tensor({{1.0, 2.0}, {3.0, 4.0}, {0.5, -1.0}})},
       tpf::tensor({{0.0, 0.0}, {1.5, 1.0}, {0.0, 0.0}, {3.0, 4.0}})},
      {"tensor_scatter_nd_add",
       [](const Ts& in) {
         return tpf::tensor_scatter_nd_add(
             in[0], tuples({{0, 1}, {2, 0}}, in[0]), in[1]);
       },
       {tpf::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}),
        tpf::tensor({0.5, -2.0})},
       tpf::tensor({{1.0, 2.5}, {3.0, 4.0}, {3.0, 6.0}})},
      {"tensor_scatter_nd_update_last_wins",
       [](const Ts& in) {
         return tpf::tensor_scatter_nd_update(
             in[0], tuples({{2}, {0}, {2}}, in[0]), in[1]);
       },
       {tpf::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}),
        tpf::tensor({{7.0, 8.0}, {9.0, 10.0}, {11.0, 12.0}})},
       tpf::tensor({{9.0, 10.0}, {3.0, 4.0}, {11.0, 12.0}})},
      {"unsorted_segment_sum",
       [](const Ts& in) {
         return tpf::unsorted_segment_sum(in[0], ids({2, 0, 2}, in[0]), 4);
       },
       {x},
       tpf::tensor({{1.5, 0.25, -0.75, 4.0},
                    {0.0, 0.0, 0.0, 0.0},
                    {-1.5, 4.75, 2.125, 0.5},
                    {0.0, 0.0, 0.0, 0.0}})},
      {"unsorted_segment_sum_of_elements",
       [](const Ts& in) {
         return tpf::unsorted_segment_sum(
             in[0], tuples({{1, 0, 1, 1}, {0, 0, 2, 1}, {2, 2, 2, 0}}, in[0]),
             3);
       },
       {x},
       tpf::tensor({-2.5, 10.0, 3.375})},
      {"segment_sum",
       [](const Ts& in) {
         return tpf::segment_sum(in[0], ids({0, 0, 2}, in[0]));
       },
       {x},
       tpf::tensor({{2.0, -1.0, 1.25, 7.5},
                    {0.0, 0.0, 0.0, 0.0},
                    {-2.0, 6.0, 0.125, -3.0}})},
      degenerate(
          "scatter_nd_of_no_tuples",
          [](const Ts& in) {
            return tpf::scatter_nd(
                tpf::zeros({0, 1}, tpf::int64, in[0].device()), in[0], {2, 3});
          },
          {testing::zeros64({0, 3})}, testing::zeros64({2, 3})),
      degenerate(
          "gather_nd_of_empty_tuples",
          [](const Ts& in) {
            return tpf::gather_nd(
                in[0], tpf::zeros({2, 0}, tpf::int64, in[0].device()));
          },
          {tpf::tensor({1.0, 2.0})}, tpf::tensor({{1.0, 2.0}, {1.0, 2.0}})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("scatter_nd and gather_nd against loops, ints and floats, devices") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> row(0, 49), col(0, 6);
  const int64_t n = 1000;  // into 350 places: every place hit ~3 times
  std::vector<int64_t> idx;
  std::vector<int32_t> upd;
  std::vector<int32_t> want(50 * 7, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = row(rng), c = col(rng);
    idx.push_back(r), idx.push_back(c);
    upd.push_back(static_cast<int32_t>(i % 17) - 8);
    want[r * 7 + c] += upd.back();
  }
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    const tpf::Tensor indices = tpf::from_vector(idx, {n, 2}).to(device);
    const tpf::Tensor updates = tpf::from_vector(upd, {n}).to(device);
    const tpf::Tensor s = tpf::scatter_nd(indices, updates, {50, 7});
    CHECK(s.dtype() == tpf::int32);
    CHECK(s.device() == device);
    CHECK(s.to_vector<int32_t>() == want);
    // int64 and float64 sums are the same integers.
    CHECK(tpf::scatter_nd(indices, updates.cast(tpf::int64), {50, 7})
              .to_vector<int32_t>() == want);
    CHECK(tpf::scatter_nd(indices, updates.cast(tpf::float64), {50, 7})
              .to_vector<int32_t>() == want);
    // gather_nd reads the sums back, tuple by tuple.
    const auto back = tpf::gather_nd(s, indices).to_vector<int32_t>();
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i)
      bad += back[i] != want[idx[2 * i] * 7 + idx[2 * i + 1]];
    CHECK(bad == 0);
    // A 3-D params, tuples of depth 2 picking rows of its last axis.
    const tpf::Tensor p =
        tpf::reshape(tpf::arange<int64_t>(0, 24), {2, 3, 4}).to(device);
    const tpf::Tensor rows =
        tpf::gather_nd(p, tpf::tensor<int64_t>({{1, 2}, {0, 0}}).to(device));
    CHECK(rows.to_vector<int64_t>() ==
          std::vector<int64_t>{20, 21, 22, 23, 0, 1, 2, 3});
    // int32 tuples and strings too (gather moves any dtype).
    const tpf::Tensor names = tpf::from_strings({"a", "b", "c", "d"}, {2, 2});
    if (device.is_cpu())
      CHECK(tpf::gather_nd(names, tpf::tensor<int32_t>({{1, 0}, {0, 1}}))
                .to_vector<std::string>() ==
            std::vector<std::string>{"c", "b"});
    // update: last wins on repeats, on every device.
    const tpf::Tensor t = tpf::zeros({50, 7}, tpf::int32, device);
    const auto u =
        tpf::tensor_scatter_nd_update(t, indices, updates).to_vector<int32_t>();
    std::vector<int32_t> last(50 * 7, 0);
    for (int64_t i = 0; i < n; ++i)
      last[idx[2 * i] * 7 + idx[2 * i + 1]] = upd[i];
    CHECK(u == last);
  }
}

TEST_CASE("segment sums of integers and their shapes") {
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    const tpf::Tensor data =
        tpf::tensor<int64_t>({{1, 2}, {3, 4}, {5, 6}}).to(device);
    const tpf::Tensor s = tpf::unsorted_segment_sum(
        data, tpf::tensor<int32_t>({1, 1, 0}).to(device), 2);
    CHECK(s.dtype() == tpf::int64);
    CHECK(s.to_vector<int64_t>() == std::vector<int64_t>{5, 6, 4, 6});
    CHECK(tpf::segment_sum(data, tpf::tensor<int64_t>({0, 1, 1}).to(device))
              .to_vector<int64_t>() == std::vector<int64_t>{1, 2, 8, 10});
    // Segments nothing lands in, and no segments at all.
    CHECK(tpf::unsorted_segment_sum(
              data, tpf::tensor<int64_t>({0, 0, 0}).to(device), 3)
              .to_vector<int64_t>() == std::vector<int64_t>{9, 12, 0, 0, 0, 0});
    CHECK(tpf::unsorted_segment_sum(tpf::zeros({0, 2}, tpf::int64, device),
                                    tpf::zeros({0}, tpf::int64, device), 0)
              .shape() == tpf::Shape{0, 2});
  }
  testing::expect_error<tpf::IndexError>(
      [] {
        tpf::unsorted_segment_sum(tpf::zeros({3}),
                                  tpf::tensor<int64_t>({0, 0, 0}), 0);
      },
      "[unsorted_segment_sum]");
}

TEST_CASE("index tuple and segment errors name the op and the values") {
  const tpf::Tensor x = x34();
  testing::expect_error<tpf::IndexError>(
      [&] {
        tpf::gather_nd(x, tpf::tensor<int64_t>({{0, 1}, {2, 4}}));
      },
      "[gather_nd] expected index 1 of tuple 1 in [0, 4) for shape (3, 4), "
      "got 4");
  testing::expect_error<tpf::IndexError>(
      [&] { tpf::gather_nd(x, tpf::tensor<int64_t>({{-1}})); },
      "[gather_nd] expected index 0 of tuple 0 in [0, 3)");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::gather_nd(x, tpf::tensor<int64_t>({{0, 1, 2}}));
      },
      "[gather_nd] expected tuples of at most 2 indices into shape (3, 4), "
      "got 3");
  testing::expect_error<tpf::DTypeError>(
      [&] {
        tpf::gather_nd(x, tpf::tensor({{0.0, 1.0}}));
      },
      "[gather_nd] expected int32 or int64 indices, got float64");
  testing::expect_error<tpf::ShapeError>(
      [&] { tpf::gather_nd(x, tpf::scalar(1, tpf::int64)); },
      "[gather_nd] expected indices of rank >= 1");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::scatter_nd(tpf::tensor<int64_t>({{0}, {1}}), tpf::ones({2, 3}),
                        {4, 2});
      },
      "[scatter_nd] expected updates of shape (2, 2) (a slice per index "
      "tuple), got (2, 3)");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::scatter_nd(tpf::tensor<int64_t>({{0}}), tpf::ones({1}), {-1});
      },
      "[scatter_nd] expected non-negative extents");
  testing::expect_error<tpf::DTypeError>(
      [&] {
        tpf::tensor_scatter_nd_add(x, tpf::tensor<int64_t>({{0, 0}}),
                                   tpf::ones({1}, tpf::float32));
      },
      "[tensor_scatter_nd_add] expected updates of the tensor's dtype "
      "float64, got float32");
  testing::expect_error<tpf::IndexError>(
      [&] {
        tpf::tensor_scatter_nd_update(x, tpf::tensor<int64_t>({{3, 0}}),
                                      tpf::ones({1}, tpf::float64));
      },
      "[tensor_scatter_nd_update] expected index 0 of tuple 0 in [0, 3)");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::unsorted_segment_sum(x, tpf::tensor<int64_t>({0, 1}), 2);
      },
      "[unsorted_segment_sum] expected segment ids whose shape (2,) begins "
      "data's shape, got data (3, 4)");
  testing::expect_error<tpf::IndexError>(
      [&] {
        tpf::unsorted_segment_sum(x, tpf::tensor<int64_t>({0, 2, 1}), 2);
      },
      "[unsorted_segment_sum]");
  testing::expect_error<tpf::ValueError>(
      [&] {
        tpf::unsorted_segment_sum(x, tpf::tensor<int64_t>({0, 0, 1}), -1);
      },
      "[unsorted_segment_sum] expected num_segments >= 0, got -1");
  testing::expect_error<tpf::ValueError>(
      [&] {
        tpf::segment_sum(x, tpf::tensor<int64_t>({0, 2, 1}));
      },
      "[segment_sum] expected segment ids sorted ascending, got 1 after 2 at "
      "position 2");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::segment_sum(x, tpf::tensor<int64_t>({{0, 2, 1}}));
      },
      "[segment_sum] expected 1-D segment ids");
  testing::expect_error<tpf::DTypeError>(
      [&] {
        tpf::scatter_nd(tpf::tensor<int64_t>({{0}}), tpf::tensor({true}), {2});
      },
      "[scatter_nd]");
  // 2^50 empty tuples hold no index but name 2^50 rows: the allocator's
  // error, not a host vector's std::bad_alloc (an ops_fuzzer finding).
  const tpf::Tensor no_indices = tpf::zeros({int64_t{1} << 50, 0}, tpf::int64);
  testing::expect_error<tpf::ResourceExhaustedError>(
      [&] { tpf::scatter_nd(no_indices, tpf::ones({1}), {2}); },
      "[scatter_nd]");
  testing::expect_error<tpf::ResourceExhaustedError>(
      [&] { tpf::gather_nd(x, no_indices); }, "[gather_nd]");
}
