// Collectives on CUDA tensors through NCCL, under `mpirun -np 1`: NCCL
// refuses two ranks on one GPU, so a one-GPU machine tests the start-up,
// every collective's path and the fold kernels at N = 1, against the CPU.
// Skips (exit 77) without a GPU or without libtapeflow_dist_nccl.
#define DOCTEST_CONFIG_IMPLEMENT
#include "support/check.hpp"
#include "tapeflow/dist.hpp"

namespace dist = tpf::dist;

namespace {

bool has_gpu() {
  try {
    return tpf::device_count(tpf::DeviceType::cuda) > 0;
  } catch (const tpf::Error&) {
    return false;
  }
}

const tpf::Device gpu = tpf::Device::cuda(0);

}  // namespace

TEST_CASE("all_reduce, broadcast and all_gather of CUDA tensors") {
  if (!has_gpu()) return;
  auto& w = dist::world();
  const auto host = tpf::stateless_random_normal({1001}, 3, 0, 1, tpf::float64);
  for (dist::Order order : {dist::Order::fast, dist::Order::canonical})
    for (dist::ReduceOp op : {dist::ReduceOp::sum, dist::ReduceOp::mean,
                              dist::ReduceOp::max, dist::ReduceOp::min}) {
      const auto t = host.to(gpu);
      const auto c = host.cpu().contiguous().cast(tpf::float64);
      const auto expected = tpf::from_vector(c.to_vector<double>(), {1001});
      w.all_reduce(t, op, order);
      w.all_reduce(expected, op, order);
      CHECK(t.device() == gpu);
      CHECK_CLOSE(t.cpu(), expected, 0.0, 0.0);
    }
  const auto ints = tpf::arange(int64_t{0}, int64_t{10}).to(gpu);
  w.broadcast(ints, 0);
  CHECK(ints.cpu().to_vector<int64_t>() ==
        tpf::arange(int64_t{0}, int64_t{10}).to_vector<int64_t>());
  const auto gathered = w.all_gather(tpf::full({2, 3}, 1.5).to(gpu));
  CHECK(gathered.device() == gpu);
  CHECK(gathered.shape() == tpf::Shape{2 * w.size(), 3});
  CHECK_CLOSE(gathered.cpu(), tpf::full({2 * w.size(), 3}, 1.5), 0.0, 0.0);
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return rc ? rc : (has_gpu() ? 0 : 77);  // 77: meson's SKIP
}
