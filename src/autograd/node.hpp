#pragma once
#include <memory>
#include <span>
#include <vector>

#include "autograd/node_pool.hpp"
#include "core/small_vector.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::autograd {

/** Shape and dtype of a tensor an op consumed or produced. */
struct TensorSpec {
  Shape shape;
  DType dtype = float32;
  Device device = Device::cpu();
};

/** What an op's vjp sees: saved tensors, input specs and the output gradient.
 */
struct VjpArgs {
  std::span<const Tensor> inputs;  // empty unless the op saves its inputs
  const Tensor& output;            // undefined unless the op saves its output
  const Tensor& grad;              // gradient of the output
  std::span<const TensorSpec> input_specs;
  uint32_t needs_mask;  // bit i: some tape wants input i's gradient

  const Tensor& x(size_t i = 0) const { return inputs[i]; }
  /** Rules skip the work for inputs nobody differentiates (constants). */
  bool needs(size_t i) const { return (needs_mask >> i) & 1u; }
  const Shape& input_shape(size_t i = 0) const { return input_specs[i].shape; }
};

/** Flags an op sets in `static constexpr int save`. */
inline constexpr int kSaveNothing = 0;
inline constexpr int kSaveInputs = 1;
inline constexpr int kSaveOutput = 2;

/** One recorded op. Shared by every tape that recorded it. */
class Node {
 public:
  virtual ~Node() = default;
  virtual const char* name() const = 0;
  /**
   * Gradient per input (undefined where none flows) from the output's;
   * bit i of `needs` says whether input i's gradient is wanted.
   */
  virtual std::vector<Tensor> backward(const Tensor& grad,
                                       uint32_t needs) const = 0;
  /** Several outputs (custom_gradient); undefined grads are left to the node.
   */
  virtual std::vector<Tensor> backward_multi(const std::vector<Tensor>& grads,
                                             uint32_t needs) const {
    return backward(grads[0], needs);
  }

  SmallVector<TensorSpec, 2> input_specs;
  TensorSpec output_spec;
};

/** Node of a registry op: keeps the op's attributes and what its vjp needs. */
template <class Op>
class OpNode final : public Node {
 public:
  OpNode(const Op& op, std::span<const Tensor> in, const Tensor& out)
      : op_(op) {
    for (const Tensor& t : in) {
      input_specs.push_back({t.shape(), t.dtype(), t.device()});
      if constexpr ((Op::save & kSaveInputs) != 0) saved_inputs_.push_back(t);
    }
    output_spec = {out.shape(), out.dtype(), out.device()};
    if constexpr ((Op::save & kSaveOutput) != 0) saved_output_ = out;
  }
  const char* name() const override { return Op::name; }
  std::vector<Tensor> backward(const Tensor& grad,
                               uint32_t needs) const override {
    VjpArgs args{{saved_inputs_.begin(), saved_inputs_.size()},
                 saved_output_,
                 grad,
                 {input_specs.begin(), input_specs.size()},
                 needs};
    return op_.vjp(args);
  }

 private:
  Op op_;
  SmallVector<Tensor, 2> saved_inputs_;
  Tensor saved_output_;
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
 * initial-exec model makes reading it a plain load; nvcc, which compiles no
 * op path, does not accept the attribute on a declaration.
 */
#ifdef __CUDACC__
extern thread_local int g_recording_tapes;
#else
extern thread_local int g_recording_tapes
    __attribute__((tls_model("initial-exec")));
#endif

/** Appends a node to every recording tape that tracks one of `in`. */
void record_node(std::span<const Tensor> in, const Tensor& out,
                 const NodeFactory& make);

/** Records `op` if some tape on this thread is recording. */
template <class Op>
inline void record(const Op& op, std::span<const Tensor> in,
                   const Tensor& out) {
  if constexpr (requires(const Op& o, const VjpArgs& a) { o.vjp(a); }) {
    if (g_recording_tapes == 0) return;
    if (!is_floating(out.dtype())) return;  // integer results carry no gradient
    auto make = [&] {
      return std::shared_ptr<Node>(std::allocate_shared<OpNode<Op>>(
          NodeAllocator<OpNode<Op>>(), op, in, out));
    };
    record_node(in, out, NodeFactory(make));
  }
}

}  // namespace tapeflow::autograd
