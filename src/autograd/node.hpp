#pragma once
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/saved.hpp"
#include "core/op_error.hpp"
#include "core/payload.hpp"
#include "core/small_block_pool.hpp"
#include "core/small_vector.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::autograd {

/** Shape and dtype of a tensor an op consumed or produced. */
struct TensorSpec {
  Shape shape;
  DType dtype = float32;
  Device device = Device::cpu();
};

/** Flags an op sets in `static constexpr int save`. */
inline constexpr int kSaveNothing = 0;
inline constexpr int kSaveInputs = 1;
inline constexpr int kSaveOutput = 2;

/**
 * Which outputs an op with kSaveOutput keeps: bit i for output i, from
 * `static constexpr uint32_t saved_outputs` where the op declares it (batch
 * norm keeps its statistics, not y), else all of them.
 */
template <class Op>
constexpr uint32_t saved_outputs_of() {
  if constexpr (requires { Op::saved_outputs; })
    return Op::saved_outputs;
  else
    return ~uint32_t{0};
}

/**
 * What an op's vjp sees: saved tensors, input specs, one gradient per output
 * (undefined where none flows) and the payload its kernel left. Reading a
 * tensor the op did not save throws instead of reading an empty handle.
 */
class VjpArgs {
 public:
  VjpArgs(const char* op, int saved, std::span<const Tensor> inputs,
          std::span<const Tensor> outputs, std::span<const Tensor> grads,
          std::span<const TensorSpec> input_specs, uint32_t needs_mask,
          const PayloadPtr& payload)
      : grad(grads[0]),
        grads(grads),
        input_specs(input_specs),
        needs_mask(needs_mask),
        payload(payload),
        op_(op),
        saved_(saved),
        inputs_(inputs),
        outputs_(outputs) {}

  const Tensor& grad;                       // gradient of output 0
  std::span<const Tensor> grads;            // one per output
  std::span<const TensorSpec> input_specs;  // every input's
  uint32_t needs_mask;        // bit i: some tape wants input i's gradient
  const PayloadPtr& payload;  // what the forward kernel left, or null

  /** Saved input i (the op must save its inputs). */
  const Tensor& x(size_t i = 0) const {
    if ((saved_ & kSaveInputs) == 0 || i >= inputs_.size())
      throw_unsaved("input", i);
    return inputs_[i];
  }
  /** Saved output i (the op must save its outputs). */
  const Tensor& output(size_t i = 0) const {
    if ((saved_ & kSaveOutput) == 0 || i >= outputs_.size() ||
        !outputs_[i].defined())
      throw_unsaved("output", i);
    return outputs_[i];
  }
  /** Rules skip the work for inputs nobody differentiates (constants). */
  bool needs(size_t i) const { return (needs_mask >> i) & 1u; }
  const Shape& input_shape(size_t i = 0) const { return input_specs[i].shape; }

 private:
  [[noreturn]] void throw_unsaved(const char* what, size_t i) const {
    const char* saves = saved_ == kSaveInputs   ? "saves only its inputs"
                        : saved_ == kSaveOutput ? "saves only its output"
                        : saved_ == 0           ? "saves nothing"
                                                : "does not save it";
    throw op_error<ValueError>(op_, "vjp reads ", what, " ", i, " but the op ",
                               saves);
  }

  const char* op_;
  int saved_;
  std::span<const Tensor> inputs_, outputs_;
};

/** One recorded op. Shared by every tape that recorded it. */
class Node {
 public:
  virtual ~Node() = default;
  virtual const char* name() const = 0;
  /**
   * Gradient per input (undefined where none flows) from one gradient per
   * output (undefined where none flows, at least one defined); bit i of
   * `needs` says whether input i's gradient is wanted.
   */
  virtual std::vector<Tensor> backward(std::span<const Tensor> grads,
                                       uint32_t needs) const = 0;

  SmallVector<TensorSpec, 2> input_specs;
};

/**
 * Node of a registry op: keeps the op's attributes, what its vjp needs and
 * the payload its kernel left.
 */
template <class Op>
class OpNode final : public Node {
  static constexpr bool kInputs = (Op::save & kSaveInputs) != 0;
  static constexpr bool kOutputs = (Op::save & kSaveOutput) != 0;
  struct Nothing {};

 public:
  OpNode(const Op& op, std::span<const Tensor> in, std::span<const Tensor> out,
         const PayloadPtr& payload)
      : op_(op), payload_(payload) {
    for (const Tensor& t : in) {
      input_specs.push_back({t.shape(), t.dtype(), t.device()});
      if constexpr (kInputs) saved_inputs_.push_back(t);
    }
    if constexpr (kOutputs)
      for (size_t i = 0; i < out.size(); ++i)
        saved_outputs_.push_back((saved_outputs_of<Op>() >> i) & 1u ? out[i]
                                                                    : Tensor());
  }
  const char* name() const override { return Op::name; }
  std::vector<Tensor> backward(std::span<const Tensor> grads,
                               uint32_t needs) const override {
    std::vector<Tensor> inputs_moved, outputs_moved;
    const VjpArgs args(
        Op::name, Op::save, recorded(saved_inputs_, "input", inputs_moved),
        recorded(saved_outputs_, "output", outputs_moved), grads,
        {input_specs.begin(), input_specs.size()}, needs, payload_);
    return op_.vjp(args);
  }

 private:
  template <class V>
  static std::span<const Tensor> recorded(const V& v, const char* what,
                                          std::vector<Tensor>& scratch) {
    if constexpr (std::is_same_v<V, Nothing>)
      return {};
    else
      return as_recorded(Op::name, what, {v.tensors.begin(), v.tensors.size()},
                         {v.stamps.begin(), v.stamps.size()}, scratch);
  }

  Op op_;
  // Only what the op saves takes room and time in its node.
  [[no_unique_address]] std::conditional_t<kInputs, SavedTensors<2>, Nothing>
      saved_inputs_;
  [[no_unique_address]] std::conditional_t<kOutputs, SavedTensors<1>, Nothing>
      saved_outputs_;
  PayloadPtr payload_;
};

/** Type-erased "make the node" callback: called at most once per op. */
class NodeFactory {
 public:
  template <class F>
  explicit NodeFactory(F& f)
      : ctx_(&f), fn_([](void* c) { return (*static_cast<F*>(c))(); }) {}
  std::shared_ptr<Node> operator()() const { return fn_(ctx_); }

 private:
  void* ctx_;
  std::shared_ptr<Node> (*fn_)(void*);
};

/**
 * Number of tapes recording on this thread right now (0 = fast path). The
 * initial-exec model and constinit (no thread-local init wrapper to call)
 * make reading it a plain load; nvcc, which compiles no op path, does not
 * accept the attribute on a declaration.
 */
#ifdef __CUDACC__
extern thread_local int g_recording_tapes;
#else
extern constinit thread_local int g_recording_tapes
    __attribute__((tls_model("initial-exec")));
#endif

/**
 * Appends a node to every recording tape that tracks one of `in`; every
 * floating output gets a slot (integer outputs carry no gradient).
 */
void record_node(std::span<const Tensor> in, std::span<const Tensor> out,
                 const NodeFactory& make);

/** Records `op` if some tape on this thread is recording. */
template <class Op>
inline void record(const Op& op, std::span<const Tensor> in,
                   std::span<const Tensor> out, const PayloadPtr& payload) {
  if constexpr (requires(const Op& o, const VjpArgs& a) { o.vjp(a); }) {
    if (g_recording_tapes == 0) return;
    bool floating = false;
    for (const Tensor& y : out) floating |= is_floating(y.dtype());
    if (!floating) return;  // integer results carry no gradient
    auto make = [&] {
      return std::shared_ptr<Node>(std::allocate_shared<OpNode<Op>>(
          SmallBlockAllocator<OpNode<Op>>(), op, in, out, payload));
    };
    record_node(in, out, NodeFactory(make));
  }
}

}  // namespace tapeflow::autograd
