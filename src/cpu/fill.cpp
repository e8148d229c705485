// Kernels that write without reading tensors: cast/copy, constants, random.
#include <cmath>
#include <numbers>

#include "core/dtype_dispatch.hpp"
#include "core/philox.hpp"
#include "cpu/strided_loop.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cpu {
namespace {

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, uint8_t>)
    return v != From(0);  // bool_: any non-zero is true
  else
    return static_cast<To>(v);
}

/** Strided copy with conversion; out may itself be a strided view. */
void cast(const Cast&, Inputs in, Tensor& out) {
  dispatch_all(in[0].dtype(), [&](auto from) {
    dispatch_all(out.dtype(), [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const From* a = static_cast<const From*>(in[0].raw_data());
      To* o = static_cast<To*>(out.raw_data());
      run_elementwise<2>(out, {&in[0]},
                         [&](const auto& off, int64_t n, const auto& st) {
                           To* po = o + off[0];
                           const From* pa = a + off[1];
                           if (st[0] == 1 && st[1] == 1) {
                             for (int64_t i = 0; i < n; ++i)
                               po[i] = convert<To>(pa[i]);
                           } else {
                             for (int64_t i = 0; i < n; ++i)
                               po[i * st[0]] = convert<To>(pa[i * st[1]]);
                           }
                         });
    });
  });
}

void full(const Full& op, Inputs, Tensor& out) {
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    const T v = convert<T>(op.value);
    parallel_for(out.numel(), kParallelGrain,
                 [&](int64_t b, int64_t e) { std::fill(o + b, o + e, v); });
  });
}

template <class Gen>
void fill_random(Tensor& out, uint64_t seed, uint64_t offset, Gen gen) {
  dispatch_floating(out.dtype(), "random", [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    parallel_for(out.numel(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        o[i] = static_cast<T>(gen(philox4x32(offset + i, seed), T{}));
    });
  });
}

void random_uniform(const RandomUniform& op, Inputs, Tensor& out) {
  fill_random(out, op.seed, op.offset, [&](const auto& w, auto tag) {
    const double u = std::is_same_v<decltype(tag), float>
                         ? unit_float(w[0])
                         : unit_double(w[0], w[1]);
    return op.lo + (op.hi - op.lo) * u;
  });
}

void random_normal(const RandomNormal& op, Inputs, Tensor& out) {
  fill_random(out, op.seed, op.offset, [&](const auto& w, auto) {
    // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
    const double u1 = 1.0 - unit_double(w[0], w[1]);
    const double u2 = unit_double(w[2], w[3]);
    const double z =
        std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    return op.mean + op.stddev * z;
  });
}

}  // namespace

void register_fill(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  r.set<Cast>(cpu, cast, "xsimd");
  r.set<Full>(cpu, full, "xsimd");
  r.set<RandomUniform>(cpu, random_uniform, "philox");
  r.set<RandomNormal>(cpu, random_normal, "philox");
}

}  // namespace tapeflow::cpu
