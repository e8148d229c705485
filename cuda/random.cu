// random_uniform and random_normal on the GPU: element i of a fresh,
// contiguous output takes Philox counter offset + i, as on the CPU
// (core/philox.hpp holds the stream for both backends).
#include "core/dtype_dispatch.hpp"
#include "core/philox.hpp"
#include "elementwise.cuh"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cuda {
namespace {

template <class T, bool kNormal>
struct RandomBody {
  T* o;
  uint64_t seed, offset;
  double a, b;  // lo and span, or mean and stddev
  __device__ void operator()(const int64_t* off) const {
    const int64_t i = off[0];  // the output is contiguous: offset = index
    const PhiloxWords w = philox4x32(offset + static_cast<uint64_t>(i), seed);
    o[i] = kNormal ? normal_sample<T>(w, a, b) : uniform_sample<T>(w, a, b);
  }
};

template <bool kNormal>
void fill(const Tensor& out, uint64_t seed, uint64_t offset, double a, double b,
          const char* op) {
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<1>(
        out, {},
        RandomBody<T, kNormal>{static_cast<T*>(out.raw_data()), seed, offset, a,
                               b});
  });
}

void random_uniform(const RandomUniform& op, Inputs, const Outputs& outs) {
  fill<false>(outs[0], op.seed, op.offset, op.lo, op.hi - op.lo, op.name);
}

void random_normal(const RandomNormal& op, Inputs, const Outputs& outs) {
  fill<true>(outs[0], op.seed, op.offset, op.mean, op.stddev, op.name);
}

}  // namespace

void register_random(Registry& r) {
  r.set<RandomUniform>(DeviceType::cuda, random_uniform, "cuda");
  r.set<RandomNormal>(DeviceType::cuda, random_normal, "cuda");
}

}  // namespace tapeflow::cuda
