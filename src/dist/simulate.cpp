#include "tapeflow/dist/simulate.hpp"

#include <cstring>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/fold.hpp"
#include "dist/host_view.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::dist {
namespace {

thread_local int t_simulated_replica = -1;

/** Sets replica_index() for one micro-step, whatever micro_step throws. */
class SimulatedReplica {
 public:
  explicit SimulatedReplica(int k) : was_(t_simulated_replica) {
    t_simulated_replica = k;
  }
  ~SimulatedReplica() { t_simulated_replica = was_; }

 private:
  int was_;
};

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

int replica_index() {
  return t_simulated_replica >= 0 ? t_simulated_replica : world().rank();
}

void manual_seed_step(uint64_t seed, int64_t step) {
  const uint64_t key = mix(mix(mix(seed) ^ static_cast<uint64_t>(step)) ^
                           static_cast<uint64_t>(replica_index()));
  manual_seed(key);
}

std::vector<Tensor> simulate(
    int n, const std::function<std::vector<Tensor>(int k)>& micro_step,
    ReduceOp op) {
  constexpr const char* kOp = "simulate";
  if (n < 1)
    throw op_error<ValueError>(kOp, "expected at least 1 replica, got ", n);
  std::vector<Tensor> acc;
  std::vector<Device> devices;
  for (int k = 0; k < n; ++k) {
    std::vector<Tensor> grads;
    {
      SimulatedReplica replica(k);
      grads = micro_step(k);
    }
    if (k == 0) {
      acc.resize(grads.size());
      devices.assign(grads.size(), Device::cpu());
    }
    if (grads.size() != acc.size())
      throw op_error<ValueError>(kOp, "expected ", acc.size(),
                                 " gradients from every micro-step, step ", k,
                                 " gave ", grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      detail::check_reducible(grads[i].dtype(), op, kOp);
      const Tensor g = detail::host_clone(grads[i]);
      devices[i] = grads[i].device();
      if (!acc[i].defined()) {
        // Micro-steps before k left it undefined: they count as zeros.
        acc[i] = k == 0 ? g : detail::host_clone(zeros_like(g));
        if (k == 0) continue;
      }
      if (!(acc[i].shape() == g.shape()) || acc[i].dtype() != g.dtype())
        throw op_error<ShapeError>(
            kOp, "expected gradient ", i, " of shape ", acc[i].shape().str(),
            " ", dtype_name(acc[i].dtype()), ", step ", k, " gave ",
            g.shape().str(), " ", dtype_name(g.dtype()));
      detail::fold_into(g.dtype(), op, acc[i].raw_data(), g.raw_data(),
                        g.numel());
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) {
    if (!acc[i].defined()) continue;
    detail::finish(acc[i].dtype(), op, acc[i].raw_data(), acc[i].numel(), n);
    acc[i] = acc[i].to(devices[i]);
  }
  return acc;
}

}  // namespace tapeflow::dist
