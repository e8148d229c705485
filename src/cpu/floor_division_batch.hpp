#pragma once
// Floor division and its remainder on xsimd batches, step for step the
// scalar functions of core/floor_division.hpp (the same IEEE operations, so
// a batch's lanes equal the scalar tail's bits), with fmod computed in the
// vector: glibc's fmod takes ~40 ns a call on the machines we measured, 20x
// an add.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/floor_division.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {

/**
 * fmod(a, b), exact as std::fmod. With t = trunc(a / b) (the division
 * rounded to nearest, then truncated) and |t| < 2^(p - 1), p the mantissa's
 * digits, t is the true truncated quotient or one more in magnitude (a
 * rounded quotient never falls below a whole number it reaches), and
 * a - t b is exactly representable in either case (a multiple of the finer
 * of a's and b's last digit, below 2|b|; Sterbenz where |a| < |b|), so one
 * fma gives it; one more in magnitude leaves a remainder of a's opposite
 * sign, and adding b back is exact. Other lanes (b = 0 or infinite, a not
 * finite, larger quotients) take std::fmod, the whole batch; so does a build
 * without FMA, where xsimd's fma is a rounded multiply and add.
 */
template <class B>
B batch_fmod(const B& a, const B& b) {
  using V = typename B::value_type;
  const auto scalar = [](V x, V y) { return std::fmod(x, y); };
#if defined(__FMA__)
  constexpr V kExact = V(uint64_t{1} << (std::numeric_limits<V>::digits - 1));
  const B t = xsimd::trunc(a / b);
  const auto covered = (xsimd::abs(t) < B(kExact)) & xsimd::isfinite(b);
  if (xsimd::all(covered)) [[likely]] {
    B r = xsimd::fma(-t, b, a);
    const auto overshot = (r != B(0)) & ((r < B(0)) != (a < B(0)));
    r = xsimd::select(overshot, r + xsimd::copysign(b, a), r);
    return xsimd::select(r == B(0), xsimd::copysign(B(0), a), r);  // fmod's 0
  }
#endif
  alignas(64) V va[B::size], vb[B::size];
  a.store_aligned(va);
  b.store_aligned(vb);
  for (size_t i = 0; i < B::size; ++i) va[i] = scalar(va[i], vb[i]);
  return B::load_aligned(va);
}

/** floor_mod (core/floor_division.hpp) of float batches. */
template <class B>
B batch_floor_mod(const B& a, const B& b) {
  const B r = batch_fmod(a, b);
  return xsimd::select((r != B(0)) & ((r < B(0)) != (b < B(0))), r + b, r);
}

/** floor_div (core/floor_division.hpp) of float batches. */
template <class B>
B batch_floor_div(const B& a, const B& b) {
  const B mod = batch_fmod(a, b);
  B div = (a - mod) / b;
  div = xsimd::select((mod != B(0)) & ((b < B(0)) != (mod < B(0))), div - B(1),
                      div);
  B whole = xsimd::floor(div);
  whole = xsimd::select(div - whole > B(0.5), whole + B(1), whole);
  const B quotient = a / b;
  const B r =
      xsimd::select(div == B(0), xsimd::copysign(B(0), quotient), whole);
  return xsimd::select(b == B(0), quotient, r);
}

}  // namespace tapeflow::cpu
