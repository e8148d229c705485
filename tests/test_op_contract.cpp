// The op contract, white-box: ops with several outputs (one gradient per
// output, integer outputs without a slot), the payload a kernel leaves for
// its own gradient (kept by the tape node, never in inference, keyed), and
// reads of tensors an op did not save; an op whose kernel is total over
// inputs its public function refuses (the fused cross entropy's labels).
#include <cmath>
#include <memory>

#include "ops/apply.hpp"
#include "ops/nn/loss_ops.hpp"
#include "ops/op.hpp"
#include "support/check.hpp"

namespace tpf = tapeflow;
using tpf::Grads;
using tpf::Inputs;
using tpf::Outputs;
using tpf::TensorSpec;
using tpf::VjpArgs;

namespace {

/** (2x, x > 0 as int32, x * x): two differentiable outputs and an integer one.
 */
struct TwoAndMask {
  static constexpr const char* name = "two_and_mask";
  static constexpr int save = tpf::kSaveInputs;
  std::array<TensorSpec, 3> infer(Inputs in) const {
    return {TensorSpec{in[0].shape(), in[0].dtype()},
            TensorSpec{in[0].shape(), tpf::int32},
            TensorSpec{in[0].shape(), in[0].dtype()}};
  }
  Grads vjp(const VjpArgs& a) const {
    CHECK(a.grads.size() == 3);
    CHECK_FALSE(a.grads[1].defined());  // the integer output has no slot
    tpf::Tensor g;
    if (a.grads[0].defined()) g = 2.0 * a.grads[0];
    if (a.grads[2].defined()) {
      const tpf::Tensor t = 2.0 * a.x() * a.grads[2];
      g = g.defined() ? g + t : t;
    }
    return {g};
  }
};
void two_and_mask(const TwoAndMask&, Inputs in, const Outputs& out) {
  const auto x = in[0].to_vector<double>();
  std::vector<double> twice, square;
  std::vector<int32_t> mask;
  for (double v : x) {
    twice.push_back(2 * v);
    square.push_back(v * v);
    mask.push_back(v > 0);
  }
  tpf::write_into(out[0], tpf::from_vector(twice, in[0].shape()), "test");
  tpf::write_into(out[1], tpf::from_vector(mask, in[0].shape()), "test");
  tpf::write_into(out[2], tpf::from_vector(square, in[0].shape()), "test");
}

/** What Doubler's kernel leaves: proof that the forward ran, keyed. */
struct Note final : tpf::Payload {
  explicit Note(int variant) : Payload({tpf::Device::cpu(), variant}) {}
};
std::weak_ptr<const tpf::Payload> g_left;  // the last payload a kernel left
bool g_saw_payload = false;                // the vjp found it

/** 2x, leaving a Note when something keeps it. */
struct Doubler {
  static constexpr const char* name = "doubler";
  static constexpr int save = tpf::kSaveNothing;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const {
    g_saw_payload =
        tpf::payload_as<Note>(a.payload, {tpf::Device::cpu(), 7}) != nullptr;
    return {2.0 * a.grad};
  }
};
void doubler(const Doubler&, Inputs in, const Outputs& out) {
  tpf::write_into(out[0], 2.0 * in[0], "test");
  if (out.keeps_payload()) {
    auto note = std::make_shared<const Note>(7);
    g_left = note;
    out.leave(note);
  }
}

/** x itself, but its vjp reads the input it never saved. */
struct ReadsUnsaved {
  static constexpr const char* name = "reads_unsaved";
  static constexpr int save = tpf::kSaveOutput;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const { return {a.grad * a.x(0)}; }
};
void copy_input(const ReadsUnsaved&, Inputs in, const Outputs& out) {
  tpf::write_into(out[0], in[0], "test");
}

const bool kRegistered = [] {
  tpf::ensure_backends_registered();
  tpf::Registry r;
  r.set<TwoAndMask>(tpf::DeviceType::cpu, two_and_mask, "test");
  r.set<Doubler>(tpf::DeviceType::cpu, doubler, "test");
  r.set<ReadsUnsaved>(tpf::DeviceType::cpu, copy_input, "test");
  return true;
}();

}  // namespace

TEST_CASE(
    "several outputs: one node, a gradient per output, integer "
    "outputs without a slot") {
  REQUIRE(kRegistered);
  const auto x = tpf::tensor({1.0, -2.0, 3.0});
  {
    tpf::GradientTape tape(true);
    tape.watch(x);
    const auto [twice, mask, square] = tpf::apply(TwoAndMask{}, {x});
    CHECK(tape.size() == 1);
    CHECK_CLOSE(mask.cast(tpf::float64), tpf::tensor({1.0, 0.0, 1.0}));
    // Only the first output flows back: the others' gradients are undefined.
    CHECK_CLOSE(tape.gradient(tpf::sum(twice), {x})[0],
                tpf::tensor({2.0, 2.0, 2.0}));
    CHECK_CLOSE(tape.gradient(tpf::sum(square), {x})[0],
                tpf::tensor({2.0, -4.0, 6.0}));
    CHECK_CLOSE(tape.gradient(tpf::sum(twice + square), {x})[0],
                tpf::tensor({4.0, -2.0, 8.0}));
  }
  const std::string why = testing::gradcheck(
      [](const std::vector<tpf::Tensor>& in) {
        const auto out = tpf::apply(TwoAndMask{}, {in[0]});
        return out[0] * out[2];
      },
      {x});
  CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("a payload lives with the tape node, only while something records") {
  REQUIRE(kRegistered);
  const auto x = tpf::tensor({1.0, 2.0});
  (void)tpf::apply(Doubler{}, {x});
  CHECK(g_left.expired());  // inference keeps nothing
  {
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = tpf::apply(Doubler{}, {x});
    CHECK_FALSE(g_left.expired());  // the node holds it
    g_saw_payload = false;
    CHECK_CLOSE(tape.gradient(tpf::sum(y), {x})[0], tpf::tensor({2.0, 2.0}));
    CHECK(g_saw_payload);
  }
  CHECK(g_left.expired());  // released with the tape
  // Untracked inputs: nothing records the op, so nothing keeps its payload.
  {
    tpf::GradientTape tape;
    (void)tpf::apply(Doubler{}, {x});
    CHECK(g_left.expired());
  }
  // A caller that asks keeps it without any tape.
  const auto kept = tpf::apply_keeping(Doubler{}, {x});
  CHECK(kept.payload != nullptr);
  CHECK(tpf::payload_as<Note>(kept.payload, {tpf::Device::cpu(), 7}));
  // Another key (device or variant) never picks it up.
  CHECK_FALSE(tpf::payload_as<Note>(kept.payload, {tpf::Device::cpu(), 8}));
  CHECK_FALSE(tpf::payload_as<Note>(kept.payload, {tpf::Device::cuda(0), 7}));
}

TEST_CASE("a vjp that reads a tensor its op did not save is an error") {
  REQUIRE(kRegistered);
  const auto x = tpf::tensor({1.0, 2.0});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = tpf::apply(ReadsUnsaved{}, {x});
  testing::expect_error<tpf::ValueError>(
      [&] { tape.gradient(tpf::sum(y), {x}); },
      "[reads_unsaved] vjp reads input 0 but the op saves only its output");
}

TEST_CASE("gradients flow through batch norm's statistics and max pooling") {
  const auto x = testing::uniform64({2, 3, 4, 4});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto [y, m, v] = tpf::nn::fused_batch_norm(x, {}, {}, 1e-3, true);
  const auto p = tpf::nn::max_pool2d(y, {.ksize = {2, 2}});
  const auto g = tape.gradient(tpf::sum(p * p) + tpf::sum(m * v), {x})[0];
  CHECK(g.shape() == x.shape());
  const std::string why = testing::gradcheck(
      [](const std::vector<tpf::Tensor>& in) {
        const auto r = tpf::nn::fused_batch_norm(in[0], {}, {}, 1e-3, true);
        return tpf::nn::max_pool2d(r.y, {.ksize = {2, 2}}) +
               tpf::reshape(r.batch_mean * r.batch_var, {1, 3, 1, 1});
      },
      {x});
  CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("the fused cross entropy op: labels out of range give NaN, no read") {
  // The public function refuses such labels first; the op itself is total.
  const auto logits = tpf::tensor({{1.0, 2.0, 3.0}, {0.5, 0.5, 0.5}});
  auto [loss, backprop] = tpf::apply(tpf::SparseSoftmaxCrossEntropy{},
                                     {logits, tpf::tensor({3, -1})});
  for (double v : loss.to_vector<double>()) CHECK(std::isnan(v));
  CHECK_CLOSE(backprop, tpf::nn::softmax(logits));
  // Labels the kernels would read past (one byte each, or one per row too
  // few) and logits of another rank are refused before any kernel runs.
  const auto op = [&](const tpf::Tensor& x, const tpf::Tensor& labels) {
    return [=] { tpf::apply(tpf::SparseSoftmaxCrossEntropy{}, {x, labels}); };
  };
  const auto labels = tpf::tensor({0, 1});
  testing::expect_error<tpf::DTypeError>(
      op(logits, labels.cast(tpf::bool_)),
      "[sparse_softmax_cross_entropy] expected float32 or float64 logits and "
      "int32 or int64 labels, got float64 and bool");
  testing::expect_error<tpf::DTypeError>(
      op(labels, labels), "[sparse_softmax_cross_entropy] expected float32");
  testing::expect_error<tpf::ShapeError>(
      op(logits, tpf::tensor({0})),
      "[sparse_softmax_cross_entropy] expected logits (rows, classes) and "
      "labels (rows,), got (2, 3) and (1,)");
  testing::expect_error<tpf::ShapeError>(
      op(tpf::reshape(logits, {6}), tpf::tensor({0, 1, 2, 0, 1, 2})),
      "[sparse_softmax_cross_entropy] expected logits (rows, classes)");
}
