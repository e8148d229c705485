// DistributedDataParallel at 1, 2 and 3 ranks: bucket order from the tape,
// bitwise equality with simulate(N) over 5 steps of a dropout + dense model,
// unused parameters, replica checks, and the input helpers.
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/check.hpp"
#include "support/device.hpp"
#include "tapeflow/dist.hpp"

namespace dist = tpf::dist;

namespace {

bool bitwise_equal(const tpf::Tensor& a, const tpf::Tensor& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
  const auto x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(),
                     x.numel() * tpf::itemsize(x.dtype())) == 0;
}

struct Net {
  std::vector<tpf::Variable> params;
  explicit Net(uint64_t seed) {
    params = {
        tpf::Variable(tpf::stateless_random_normal({8, 16}, seed, 0, 0.3)),
        tpf::Variable(tpf::zeros({16})),
        tpf::Variable(tpf::stateless_random_normal({16, 4}, seed + 1, 0, 0.3)),
        tpf::Variable(tpf::zeros({4}))};
  }
  tpf::Tensor loss(const tpf::Tensor& x, const tpf::Tensor& y) const {
    auto h = tpf::nn::relu(tpf::matmul(x, params[0]) + params[1]);
    h = tpf::nn::dropout(h, 0.3);
    return tpf::nn::mean_squared_error(y,
                                       tpf::matmul(h, params[2]) + params[3]);
  }
};

constexpr int64_t kGlobalBatch = 12;  // a multiple of 1, 2 and 3

/** Rows [k*b, (k+1)*b) of step `step`'s global batch. */
std::pair<tpf::Tensor, tpf::Tensor> micro_batch(int64_t step, int k, int n) {
  const auto x = tpf::stateless_random_normal({kGlobalBatch, 8}, 100 + step);
  const auto y = tpf::stateless_random_normal({kGlobalBatch, 4}, 200 + step);
  const int64_t b = kGlobalBatch / n;
  return {tpf::slice(x, {k * b, 0}, {b, 8}), tpf::slice(y, {k * b, 0}, {b, 4})};
}

std::vector<tpf::Tensor> local_gradients(const Net& net, int64_t step, int k,
                                         int n) {
  dist::manual_seed_step(7, step);
  const auto [x, y] = micro_batch(step, k, n);
  tpf::GradientTape tape;
  const auto loss = net.loss(x, y);
  return tape.gradient(loss, {net.params.begin(), net.params.end()});
}

}  // namespace

TEST_CASE("5 steps of DDP equal simulate(N) bit for bit, in either overlap") {
  tpf::config::set_intra_op_threads(1);
  auto& w = dist::world();
  const int n = w.size();
  for (dist::Overlap overlap : {dist::Overlap::off, dist::Overlap::on}) {
    Net replica(1), reference(1);
    // 100-byte buckets: several, each reduced as soon as it is full.
    dist::DistributedDataParallel ddp(
        replica.params,
        {.bucket_cap_mb = 1e-4, .first_bucket_mb = 1e-4, .overlap = overlap});
    CHECK(ddp.overlaps() == (overlap == dist::Overlap::on));
    tpf::optim::Adam opt(1e-2), ref_opt(1e-2);
    for (int64_t step = 0; step < 5; ++step) {
      dist::manual_seed_step(7, step);
      const auto [x, y] = micro_batch(step, w.rank(), n);
      tpf::GradientTape tape;
      const auto loss = replica.loss(x, y);
      opt.apply_gradients(ddp.gradient(tape, loss, replica.params),
                          replica.params);
      ref_opt.apply_gradients(
          dist::simulate(
              n, [&](int k) { return local_gradients(reference, step, k, n); }),
          reference.params);
    }
    CHECK(ddp.steps() == 5);
    CHECK(ddp.buckets().size() == 4);
    for (size_t i = 0; i < replica.params.size(); ++i) {
      CAPTURE(i);
      CHECK(bitwise_equal(replica.params[i], reference.params[i]));
    }
    ddp.check_replicas();
  }
}

TEST_CASE("buckets follow the order the tape finalizes gradients") {
  auto& w = dist::world();
  // First uses in forward order: w0, w1, w2, w3, then v; gradients become
  // final in reverse: v, w3, w2, w1, w0. 40 bytes each; caps of 100 bytes
  // and a dtype change split them.
  std::vector<tpf::Variable> ps;
  for (int i = 0; i < 4; ++i)
    ps.emplace_back(tpf::full({10}, 1.0 + i + w.rank()));
  ps.emplace_back(tpf::full({5}, 2.0, tpf::float64));
  dist::DistributedDataParallel ddp(
      ps, {.bucket_cap_mb = 1e-4, .first_bucket_mb = 1e-4});
  const auto x = tpf::full({10}, 1.0 + w.rank());
  for (int step = 0; step < 2; ++step) {
    tpf::GradientTape tape;
    const auto product = tpf::sum(x * ps[0] * ps[1] * ps[2] * ps[3]);
    const auto loss = product + tpf::sum(ps[4]);
    const auto grads = ddp.gradient(tape, loss);
    const std::vector<std::vector<size_t>> want = {{4}, {3, 2}, {1, 0}};
    CHECK(ddp.buckets() == want);
    // The parameters were broadcast from rank 0 (1, 2, 3, 4); x differs.
    double mean_x = 0;
    for (int r = 0; r < w.size(); ++r) mean_x += 1.0 + r;
    mean_x /= w.size();
    CHECK_CLOSE(grads[0], tpf::full({10}, mean_x * 2 * 3 * 4), 1e-6, 1e-6);
    CHECK_CLOSE(grads[4], tpf::full({5}, 1.0, tpf::float64), 0.0, 0.0);
  }
}

TEST_CASE("a gradient as large as the first bucket is reduced on its own") {
  auto& w = dist::world();
  // 400 bytes >= the 100-byte first bucket: alone, reduced in place.
  std::vector<tpf::Variable> ps = {tpf::Variable(tpf::full({10}, 1.0)),
                                   tpf::Variable(tpf::full({100}, 1.0)),
                                   tpf::Variable(tpf::full({10}, 1.0))};
  dist::DistributedDataParallel ddp(
      ps, {.bucket_cap_mb = 1e-3, .first_bucket_mb = 1e-4});
  for (int step = 0; step < 2; ++step) {
    tpf::GradientTape tape;
    const auto a = tpf::sum(ps[0] * (1.0 + w.rank()));
    const auto b = tpf::sum(ps[1] * (2.0 + w.rank()));
    const auto loss = a + b + tpf::sum(ps[2]);
    const auto grads = ddp.gradient(tape, loss);
    const std::vector<std::vector<size_t>> want = {{2}, {1}, {0}};
    CHECK(ddp.buckets() == want);
    const double mean_rank = (w.size() - 1) / 2.0;
    CHECK_CLOSE(grads[1], tpf::full({100}, 2.0 + mean_rank), 1e-6, 1e-6);
    CHECK_CLOSE(grads[0], tpf::full({10}, 1.0 + mean_rank), 1e-6, 1e-6);
  }
}

TEST_CASE(
    "unused parameters: undefined when no rank used one, zeros from the "
    "others") {
  auto& w = dist::world();
  const int n = w.size();
  std::vector<tpf::Variable> ps = {tpf::Variable(tpf::full({3}, 2.0)),
                                   tpf::Variable(tpf::full({2}, 5.0)),
                                   tpf::Variable(tpf::full({4}, 1.0))};
  dist::DistributedDataParallel ddp(ps);
  for (int s = 0; s < 2; ++s) {
    tpf::GradientTape tape;
    auto loss = tpf::sum(ps[0] * (1.0 + w.rank()));
    if (w.rank() == 0) loss = loss + tpf::sum(ps[1] * ps[1]);
    const auto grads = ddp.gradient(tape, loss);
    const auto want = dist::simulate(n, [&](int k) {
      tpf::GradientTape t2;
      auto l = tpf::sum(ps[0] * (1.0 + k));
      if (k == 0) l = l + tpf::sum(ps[1] * ps[1]);
      return t2.gradient(l, {ps[0], ps[1], ps[2]});
    });
    CHECK(bitwise_equal(grads[0], want[0]));
    CHECK(bitwise_equal(grads[1], want[1]));
    CHECK_FALSE(grads[2].defined());
    CHECK_FALSE(want[2].defined());
  }
}

TEST_CASE("check_replicas names a diverged rank; misuse is refused") {
  auto& w = dist::world();
  std::vector<tpf::Variable> ps = {tpf::Variable(tpf::full({3}, 1.0))};
  dist::DistributedDataParallel ddp(ps);
  ddp.check_replicas();
  if (w.size() > 1) {
    if (w.rank() == 1) ps[0].assign(tpf::full({3}, 2.0));
    testing::expect_error<dist::ReplicaDivergenceError>(
        [&] { ddp.check_replicas(); },
        "[check_replicas] expected every rank to hold rank 0's parameters");
  }
  CHECK_THROWS_AS(dist::DistributedDataParallel({ps[0], ps[0]}),
                  tpf::ValueError);
  tpf::GradientTape tape;
  const auto loss = tpf::sum(ps[0]);
  tpf::Variable other(tpf::zeros({3}));
  CHECK_THROWS_AS(ddp.gradient(tape, loss, {other}), tpf::ValueError);
}

TEST_CASE("DDP refuses parameters that differ between ranks, on every rank") {
  // Without TAPEFLOW_DIST_DEBUG too: the broadcast of rank 0's values filled
  // a (3, 2) with a (2, 3)'s bytes, a float64 with float32's, or hung on a
  // parameter only one rank had.
  auto& w = dist::world();
  if (w.size() == 1) return;
  const bool odd = w.rank() == 1;
  const auto expect = [](const std::vector<tpf::Variable>& ps,
                         const std::string& message) {
    testing::expect_error<dist::DistError>(
        [&] { dist::DistributedDataParallel ddp(ps); },
        "[DistributedDataParallel] expected the same parameters (their "
        "count, dtypes and shapes) on every rank: " +
            message);
  };
  const tpf::Shape shape = odd ? tpf::Shape{3, 2} : tpf::Shape{2, 3};
  expect({tpf::Variable(tpf::ones(shape))},
         "rank 1 has 1 that differ from rank 0's");
  expect({tpf::Variable(tpf::ones({4}, odd ? tpf::float64 : tpf::float32))},
         "rank 1 has 1 that differ from rank 0's");
  std::vector<tpf::Variable> more = {tpf::Variable(tpf::ones({4}))};
  if (odd) more.push_back(tpf::Variable(tpf::ones({2})));
  expect(more, "rank 0 has 1, rank 1 has 2");
}

TEST_CASE("average_buffers gives every rank the mean") {
  auto& w = dist::world();
  std::vector<tpf::Variable> ps = {tpf::Variable(tpf::zeros({1}))};
  dist::DistributedDataParallel ddp(ps);
  tpf::Variable moving(tpf::full({2}, 3.0 * w.rank(), tpf::float64));
  ddp.average_buffers({moving});
  CHECK(moving.to_vector<double>() ==
        std::vector<double>(2, 3.0 * (w.size() - 1) / 2));
}

TEST_CASE("shard_batches and Dataset::shard split the input by rank") {
  auto& w = dist::world();
  const int n = w.size();
  std::vector<int64_t> seen;
  for (const auto& batch :
       dist::shard_batches(tpf::data::range(0, 25), 6 * n)) {
    CHECK(batch.shape() == tpf::Shape{6});
    for (int64_t v : batch.to_vector<int64_t>()) seen.push_back(v);
  }
  std::vector<int64_t> want;
  for (int64_t g = 0; g + 6 * n <= 25; g += 6 * n)
    for (int64_t i = 0; i < 6; ++i) want.push_back(g + 6 * w.rank() + i);
  CHECK(seen == want);
  CHECK_THROWS_AS(dist::shard_batches(tpf::data::range(0, 4), 0),
                  tpf::ValueError);
  if (n > 1)
    CHECK_THROWS_AS(dist::shard_batches(tpf::data::range(0, 4), 6 * n + 1),
                    tpf::ValueError);

  const auto part = tpf::data::range(0, 10).shard(3, 1);
  CHECK(part.cardinality() == 3);
  std::vector<int64_t> got;
  for (const auto& v : part) got.push_back(v.item<int64_t>());
  CHECK(got == std::vector<int64_t>{1, 4, 7});
  CHECK(tpf::data::range(0, 10).shard(3, 0).cardinality() == 4);
  CHECK_THROWS_AS(tpf::data::range(0, 10).shard(3, 3), tpf::ValueError);
}

TEST_CASE("parameters on a device keep their buckets and gradients there") {
  // The host-backed test device stands in for a GPU (or the GPU itself where
  // one is present): buckets are filled by the device's copies and reduced
  // through host memory or NCCL; the numbers match a CPU replica (bit for
  // bit on the test device, to float rounding on a GPU).
  const tpf::Device device = testing::test_devices().devices.at(0);
  Net on_cpu(5), on_device(5);
  for (auto& p : on_device.params) p = tpf::Variable(p.to(device));
  dist::DistributedDataParallel cpu_ddp(on_cpu.params);
  dist::DistributedDataParallel device_ddp(on_device.params);
  CHECK(device_ddp.overlaps() == (dist::world().size() > 1));
  for (int64_t step = 0; step < 2; ++step) {
    const auto [x, y] =
        micro_batch(step, dist::world().rank(), dist::world().size());
    tpf::GradientTape t1, t2;
    dist::manual_seed_step(3, step);  // the same dropout masks for both
    const auto l1 = on_cpu.loss(x, y);
    dist::manual_seed_step(3, step);
    const auto l2 = on_device.loss(x.to(device), y.to(device));
    const auto g1 = cpu_ddp.gradient(t1, l1);
    const auto g2 = device_ddp.gradient(t2, l2);
    for (size_t i = 0; i < g1.size(); ++i) {
      CAPTURE(i);
      CHECK(g2[i].device() == device);
      CHECK_CLOSE(g2[i].cpu(), g1[i], 1e-6, 1e-6);
    }
  }
}
