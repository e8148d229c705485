#pragma once
#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "autograd/node.hpp"
#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "core/small_vector.hpp"
#include "core/registry.hpp"
#include "ops/op.hpp"
#include "profiler/hook.hpp"

namespace tapeflow {

/** The device all inputs share, or DeviceError naming `op`. */
Device common_device(const char* op, Inputs in);

/**
 * Runs `op` on the CPU for inputs living on a device without a kernel:
 * host copies in, outputs of `specs` allocated on the host and copied into
 * `out` on `device`. The kernel leaves no payload: it would describe host
 * copies that no later pass sees again.
 */
void run_soft_placed(const char* op, Inputs in, Device device,
                     const std::function<void(Inputs, const Outputs&)>& cpu_run,
                     std::span<const autograd::TensorSpec> specs,
                     std::span<Tensor> out);
[[noreturn]] void throw_no_kernel(const char* op, Device device);
/**
 * Called from a catch (...) around a kernel: a tapeflow::Error passes
 * through; a foreign exception (std::bad_alloc, std::length_error, a
 * backend library's own error) becomes the Error subclass that fits, its
 * message naming `op`.
 */
[[noreturn]] void rethrow_as_error(const char* op);

namespace detail {
template <class Specs>
struct SpecCount : std::integral_constant<size_t, 1> {};
template <size_t N>
struct SpecCount<std::array<autograd::TensorSpec, N>>
    : std::integral_constant<size_t, N> {};
}  // namespace detail

/**
 * How many outputs Op has: `infer` returns one TensorSpec, or a
 * std::array of them for several (max pooling's workspace, batch norm's
 * statistics).
 */
template <class Op>
inline constexpr size_t num_outputs =
    detail::SpecCount<decltype(std::declval<const Op&>().infer(
        Inputs{}))>::value;

/** What apply returns: a Tensor, or an array of them for several outputs. */
template <class Op>
using OpResult = std::conditional_t<num_outputs<Op> == 1, Tensor,
                                    std::array<Tensor, num_outputs<Op>>>;

/** The outputs of apply_keeping, and what the kernel left (or null). */
template <class Op>
struct Kept {
  OpResult<Op> out;
  PayloadPtr payload;
};

namespace detail {

/** DTypeError naming `op` when an input or output is a string. */
inline void refuse_strings(const char* op, Inputs in,
                           std::span<const autograd::TensorSpec> specs) {
  bool strings = false;
  for (const Tensor& t : in) strings |= t.defined() && is_string(t.dtype());
  for (const autograd::TensorSpec& s : specs) strings |= is_string(s.dtype);
  if (strings)
    throw op_error<DTypeError>(op, "expected a numeric dtype, got string");
}

/** The specs `infer` returned, as a span (one spec or an array of them). */
inline std::span<const autograd::TensorSpec> spec_span(
    const autograd::TensorSpec& spec) {
  return {&spec, 1};
}
template <size_t N>
std::span<const autograd::TensorSpec> spec_span(
    const std::array<autograd::TensorSpec, N>& specs) {
  return specs;
}

/**
 * Outputs with no element (a 0 extent) are the whole result: no kernel runs
 * for them, so kernels need not guard their outer loops (the 2^50 rows of a
 * (2^50, 1, 0) input would take forever to do nothing).
 */
template <size_t N>
bool all_empty(const std::array<Tensor, N>& out) {
  for (const Tensor& t : out)
    if (t.impl()->storage->nbytes() != 0) return false;
  return true;
}
inline bool all_empty(std::span<const autograd::TensorSpec> specs) {
  for (const autograd::TensorSpec& s : specs)
    if (std::ranges::find(s.shape, 0) == s.shape.end()) return false;
  return true;
}

/**
 * The inputs a kernel reads: `in` itself, or, when it holds a Variable, `in`
 * with each Variable held (see `held`), since another thread's update may
 * move that Variable to a fresh buffer while the kernel reads the old one.
 */
class HeldInputs {
 public:
  explicit HeldInputs(Inputs in) : inputs_(in) {
    for (const Tensor& t : in)
      if (t.defined() && t.impl()->variable) {
        for (const Tensor& u : in) held_.push_back(held(u));
        inputs_ = Inputs(held_.data(), held_.size());
        return;
      }
  }
  HeldInputs(const HeldInputs&) = delete;
  HeldInputs& operator=(const HeldInputs&) = delete;
  Inputs get() const { return inputs_; }

 private:
  SmallVector<Tensor, 4> held_;
  Inputs inputs_;
};

/** Fresh outputs of `specs` on `device`, each constructed in place. */
template <size_t N, size_t... I>
std::array<Tensor, N> allocate(std::span<const autograd::TensorSpec> specs,
                               Device device, const char* op,
                               std::index_sequence<I...>) {
  return {empty_tensor(specs[I].shape, specs[I].dtype, device, op)...};
}

/**
 * The path of every computing op: device check, shape/dtype inference (errors
 * before any kernel runs), allocation, the device's kernel, tape recording.
 * The kernel may leave a payload when `keep` is given (the caller wants it)
 * or a tape records (its node keeps it).
 */
template <class Op>
OpResult<Op> run_unprofiled(Device device, const Op& op, Inputs in,
                            PayloadPtr* keep) {
  constexpr size_t n = num_outputs<Op>;
  const auto inferred = op.infer(in);
  const std::span<const autograd::TensorSpec> specs = spec_span(inferred);
  if constexpr (!takes_strings<Op>) refuse_strings(Op::name, in, specs);
  const bool recording = autograd::g_recording_tapes != 0;
  PayloadPtr left;
  PayloadPtr* slot = keep ? keep : (recording ? &left : nullptr);
  const Kernel<Op> kernel = find_kernel<Op>(device);
  std::array<Tensor, n> out =
      kernel
          ? allocate<n>(specs, device, Op::name, std::make_index_sequence<n>())
          : std::array<Tensor, n>{};
  try {
    const HeldInputs held_in(in);
    if (kernel) [[likely]] {
      if (!all_empty(out)) kernel(op, held_in.get(), Outputs(out, slot));
    } else if (all_empty(specs)) {
      out = allocate<n>(specs, device, Op::name, std::make_index_sequence<n>());
    } else {
      Kernel<Op> cpu = KernelTable<Op>::kernels[0];
      if (!cpu) throw_no_kernel(Op::name, device);
      run_soft_placed(
          Op::name, held_in.get(), device,
          [&](Inputs host_in, const Outputs& host_out) {
            log_placement(Op::name, Device::cpu(), KernelTable<Op>::backends[0],
                          true);
            cpu(op, host_in, host_out);
          },
          specs, out);
    }
  } catch (...) {
    rethrow_as_error(Op::name);
  }
  if (recording) autograd::record(op, in, out, *slot);
  if constexpr (n == 1)
    return std::move(out[0]);
  else
    return out;
}

/** run_unprofiled under the profiler's timer, with the backend it ran on. */
template <class Op>
OpResult<Op> run_profiled(Device device, const Op& op, Inputs in,
                          PayloadPtr* keep) {
  profiler::detail::OpTimer timer;
  OpResult<Op> out = run_unprofiled(device, op, in, keep);
  const int d = static_cast<int>(device.type);
  const bool soft = !KernelTable<Op>::kernels[d];
  timer.finish(Op::name, device, KernelTable<Op>::backends[soft ? 0 : d], soft,
               in);
  return out;
}

/** The op path; a running profiler costs it one branch when off. */
template <class Op>
OpResult<Op> run(Device device, const Op& op, Inputs in, PayloadPtr* keep) {
  if (profiler::detail::g_running.load(std::memory_order_relaxed)) [[unlikely]]
    return run_profiled(device, op, in, keep);
  return run_unprofiled(device, op, in, keep);
}

/** A view op under the profiler's timer ("view": no registry kernel). */
template <class Op>
Tensor view_profiled(const Op& op, const Tensor& x) {
  profiler::detail::OpTimer timer;
  Tensor out = op.view(x);
  autograd::record(op, Inputs(&x, 1), std::span<const Tensor>(&out, 1),
                   PayloadPtr());
  timer.finish(Op::name, x.device(), "view", false, Inputs(&x, 1));
  return out;
}

}  // namespace detail

template <class Op>
OpResult<Op> apply_on(Device device, const Op& op, Inputs in) {
  return detail::run(device, op, in, nullptr);
}

template <class Op>
OpResult<Op> apply(const Op& op, Inputs in) {
  return detail::run(common_device(Op::name, in), op, in, nullptr);
}

template <class Op>
OpResult<Op> apply(const Op& op, std::initializer_list<Tensor> in) {
  return apply(op, Inputs(in.begin(), in.size()));
}

/**
 * apply, also returning what the kernel left for a later pass whether or
 * not a tape records (a gradient rule hands one pass's payload to the next).
 */
template <class Op>
Kept<Op> apply_keeping(const Op& op, std::initializer_list<Tensor> in) {
  const Inputs inputs(in.begin(), in.size());
  Kept<Op> r;
  r.out = detail::run(common_device(Op::name, inputs), op, inputs, &r.payload);
  return r;
}

/** Ops that only reinterpret storage: `op.view(x)` builds the result. */
template <class Op>
Tensor apply_view(const Op& op, const Tensor& x) {
  if (profiler::detail::g_running.load(std::memory_order_relaxed)) [[unlikely]]
    return detail::view_profiled(op, x);
  Tensor out = op.view(x);
  autograd::record(op, Inputs(&x, 1), std::span<const Tensor>(&out, 1),
                   PayloadPtr());
  return out;
}

}  // namespace tapeflow
