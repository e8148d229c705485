#include <algorithm>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "autograd/tape_state.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"

namespace tapeflow::autograd {

constinit thread_local int g_recording_tapes
    __attribute__((tls_model("initial-exec"))) = 0;

namespace {

// Tapes recording this thread's ops. Only this thread touches the vector.
thread_local std::vector<std::shared_ptr<TapeState>> t_tapes
    __attribute__((tls_model("initial-exec")));
thread_local int t_no_grad = 0;

std::atomic<uint64_t> g_next_serial{1};

// Serials of tapes alive on any thread; consulted only to prune stale marks.
std::mutex g_live_mu;
std::unordered_set<uint64_t>& live_tapes() {
  static auto* s = new std::unordered_set<uint64_t>();
  return *s;
}

bool is_live(uint64_t serial) {
  std::lock_guard lock(g_live_mu);
  return live_tapes().count(serial) != 0;
}

}  // namespace

void refresh_recording() {
  std::erase_if(t_tapes, [](const std::shared_ptr<TapeState>& t) {
    return t->abandoned.load(std::memory_order_acquire);
  });
  int n = 0;
  if (t_no_grad == 0)
    for (const auto& t : t_tapes) n += t->paused ? 0 : 1;
  g_recording_tapes = n;
}

void start_recording(const std::shared_ptr<TapeState>& tape) {
  t_tapes.push_back(tape);
  refresh_recording();
}

void stop_recording(TapeState& tape) {
  const auto it = std::find_if(t_tapes.begin(), t_tapes.end(),
                               [&](const auto& t) { return t.get() == &tape; });
  if (it == t_tapes.end()) {
    tape.abandoned.store(true, std::memory_order_release);  // another thread's
    return;
  }
  t_tapes.erase(it);
  refresh_recording();
}

TapeState::TapeState(bool persistent_)
    : serial(g_next_serial.fetch_add(1)), persistent(persistent_) {
  entries.reserve(256);  // a training step records a few hundred ops
  std::lock_guard lock(g_live_mu);
  live_tapes().insert(serial);
}

TapeState::~TapeState() {
  std::lock_guard lock(g_live_mu);
  live_tapes().erase(serial);
}

int32_t TapeState::watch(const Tensor& t) {
  int32_t s = t.impl()->marks.find(serial);
  if (s >= 0) return s;
  s = next_slot++;
  t.impl()->marks.add(serial, s);
  return s;
}

int32_t TapeState::slot_of(const Tensor& t) {
  if (!t.defined()) return -1;
  const int32_t s = t.impl()->marks.find(serial);
  if (s >= 0 || !t.trainable() || !is_floating(t.dtype())) return s;
  return watch(t);
}

void record_node(std::span<const Tensor> in, std::span<const Tensor> out,
                 const NodeFactory& make) {
  std::shared_ptr<Node> node;
  bool abandoned = false;
  for (const auto& tape : t_tapes) {
    if (tape->paused) continue;
    if (tape->abandoned.load(std::memory_order_relaxed)) {
      abandoned = true;
      continue;
    }
    TapeEntry entry;
    bool tracked = false;
    for (const Tensor& x : in) {
      const int32_t s = tape->slot_of(x);
      entry.input_slots.push_back(s);
      tracked |= s >= 0;
    }
    if (!tracked) continue;
    if (!node) node = make();
    entry.node = node;
    for (const Tensor& y : out) {
      int32_t s = -1;
      if (is_floating(y.dtype())) {
        s = tape->next_slot++;
        y.impl()->marks.add(tape->serial, s);
      }
      entry.output_slots.push_back(s);
    }
    tape->entries.push_back(std::move(entry));
  }
  if (abandoned) refresh_recording();
}

}  // namespace tapeflow::autograd

namespace tapeflow {

using autograd::TapeState;

// --- TapeMarks ---------------------------------------------------------------

namespace {

constexpr int kSlotBits = 28;
constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;

uint64_t pack(uint64_t tape, int32_t slot) {
  if (static_cast<uint64_t>(slot) > kSlotMask)
    throw ValueError("[GradientTape] expected at most " +
                     std::to_string(kSlotMask) +
                     " tracked tensors per tape, got more");
  return (tape << kSlotBits) | static_cast<uint64_t>(slot);
}

/** Guards the rarely used spill list. */
class SpillLock {
 public:
  explicit SpillLock(std::atomic_flag& f) : f_(f) {
    while (f_.test_and_set(std::memory_order_acquire))
      std::this_thread::yield();
  }
  ~SpillLock() { f_.clear(std::memory_order_release); }

 private:
  std::atomic_flag& f_;
};

}  // namespace

int32_t TapeMarks::find(uint64_t tape) const {
  for (const auto& word : inline_) {
    const uint64_t w = word.load(std::memory_order_acquire);
    if (w >> kSlotBits == tape) return static_cast<int32_t>(w & kSlotMask);
  }
  if (!spilled_.load(std::memory_order_acquire)) return -1;
  SpillLock lock(spill_busy_);
  for (const Mark& m : spill_)
    if (m.tape == tape) return m.slot;
  return -1;
}

void TapeMarks::add(uint64_t tape, int32_t slot) {
  const uint64_t packed = pack(tape, slot);
  for (auto& word : inline_) {
    uint64_t expected = 0;
    if (word.compare_exchange_strong(expected, packed)) return;
  }
  // Both words taken: reclaim those of finished tapes, so a Variable used by
  // one tape per training step keeps a constant footprint.
  for (auto& word : inline_) {
    uint64_t old = word.load(std::memory_order_acquire);
    if (!autograd::is_live(old >> kSlotBits) &&
        word.compare_exchange_strong(old, packed))
      return;
  }
  SpillLock lock(spill_busy_);
  std::erase_if(spill_,
                [](const Mark& m) { return !autograd::is_live(m.tape); });
  spill_.push_back({tape, slot});
  spilled_.store(true, std::memory_order_release);
}

void TapeMarks::add_all(const TapeMarks& other) {
  for (const auto& word : other.inline_) {
    const uint64_t w = word.load(std::memory_order_acquire);
    if (w != 0) add(w >> kSlotBits, static_cast<int32_t>(w & kSlotMask));
  }
  if (!other.spilled_.load(std::memory_order_acquire)) return;
  std::vector<Mark> spill;
  {
    SpillLock lock(other.spill_busy_);
    spill = other.spill_;
  }
  for (const Mark& m : spill) add(m.tape, m.slot);
}

// --- GradientTape ------------------------------------------------------------

GradientTape::GradientTape(bool persistent)
    : state_(std::make_shared<TapeState>(persistent)) {
  autograd::start_recording(state_);
}
GradientTape::~GradientTape() {
  autograd::stop_recording(*state_);
}

void GradientTape::watch(const Tensor& t) {
  if (!t.defined())
    throw ValueError("[watch] expected a defined tensor, got an empty one");
  if (!is_floating(t.dtype()))
    throw DTypeError("[watch] expected a float32 or float64 tensor, got " +
                     std::string(dtype_name(t.dtype())));
  state_->watch(t);
}

size_t GradientTape::size() const {
  return state_->entries.size();
}
bool GradientTape::persistent() const {
  return state_->persistent;
}
void GradientTape::reset() {
  // A hook of gradient() may call this: the walk reads the entries.
  if (state_->walks > 0)
    throw ValueError(
        "[reset] expected no gradient() in progress on this tape, got a call "
        "from inside one (a gradient hook)");
  state_->entries.clear();
  state_->used = false;
}

namespace {

/** Pauses a tape while it computes its own gradient, and counts the walk. */
class PauseTape {
 public:
  explicit PauseTape(TapeState& s) : s_(s), was_(s.paused) {
    s_.paused = true;
    ++s_.walks;
    autograd::refresh_recording();
  }
  ~PauseTape() {
    --s_.walks;
    s_.paused = was_;
    autograd::refresh_recording();
  }

 private:
  TapeState& s_;
  bool was_;
};

/** Brings an op's input gradient to the input's shape and dtype. */
Tensor fit_to(const Tensor& g, const autograd::TensorSpec& spec) {
  Tensor r = g.shape() == spec.shape ? g : sum_to(g, spec.shape);
  return r.dtype() == spec.dtype ? r : cast(r, spec.dtype);
}

/** Runs one recorded op's backward, accumulating into its inputs' slots. */
void run_backward(const autograd::TapeEntry& e, std::vector<Tensor>& grads,
                  const std::vector<char>& keep) {
  bool any = false;
  for (int32_t o : e.output_slots) any |= o >= 0 && grads[o].defined();
  if (!any) return;
  SmallVector<Tensor, 3> gys;
  for (int32_t o : e.output_slots) {
    gys.push_back(o >= 0 ? grads[o] : Tensor());
    if (o >= 0 && !keep[o]) grads[o] = Tensor();  // consumers are all done
  }
  uint32_t needs = 0;
  for (size_t i = 0; i < e.input_slots.size() && i < 32; ++i)
    needs |= uint32_t{e.input_slots[i] >= 0} << i;
  if (e.input_slots.size() > 32) needs = ~uint32_t{0};
  const std::vector<Tensor> gxs =
      e.node->backward({gys.begin(), gys.size()}, needs);
  for (size_t i = 0; i < e.input_slots.size() && i < gxs.size(); ++i) {
    const int32_t slot = e.input_slots[i];
    if (slot < 0 || !gxs[i].defined()) continue;
    Tensor gi = fit_to(gxs[i], e.node->input_specs[i]);
    grads[slot] = grads[slot].defined() ? add(grads[slot], gi) : gi;
  }
}

/**
 * When each source's gradient becomes final: after the reverse walk has run
 * the source's first forward use (no later op can add to it). O(sum of inputs).
 */
struct ReadyPlan {
  std::vector<uint32_t> unused;              // final before the walk
  std::vector<std::vector<uint32_t>> after;  // by entry index
};

ReadyPlan plan_ready(const autograd::TapeState& s,
                     const std::vector<int32_t>& source_slots) {
  std::vector<int64_t> first_use(s.next_slot, -1);
  for (size_t k = 0; k < s.entries.size(); ++k)
    for (int32_t slot : s.entries[k].input_slots)
      if (slot >= 0 && first_use[slot] < 0) first_use[slot] = int64_t(k);
  ReadyPlan plan;
  plan.after.resize(s.entries.size());
  for (size_t i = 0; i < source_slots.size(); ++i) {
    const int32_t slot = source_slots[i];
    const int64_t k = slot >= 0 ? first_use[slot] : -1;
    (k < 0 ? plan.unused : plan.after[k]).push_back(uint32_t(i));
  }
  return plan;
}

}  // namespace

std::vector<Tensor> GradientTape::gradient(
    const Tensor& target, const std::vector<Tensor>& sources,
    const std::vector<Tensor>& output_gradients,
    UnconnectedGradients unconnected) {
  GradientOptions options;
  options.output_gradients = output_gradients;
  options.unconnected = unconnected;
  return gradient(target, sources, options);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target,
                                           const std::vector<Tensor>& sources,
                                           const GradientOptions& options) {
  TapeState& s = *state_;
  const std::vector<Tensor>& output_gradients = options.output_gradients;
  if (s.used && !s.persistent)
    throw ValueError(
        "[gradient] expected one gradient() call on a non-persistent "
        "GradientTape, got a second (use GradientTape(true))");
  if (!target.defined())
    throw ValueError(
        "[gradient] expected a defined target, got an empty tensor");
  if (output_gradients.size() > 1)
    throw ValueError("[gradient] expected at most 1 output gradient, got " +
                     std::to_string(output_gradients.size()));
  s.used = true;
  PauseTape pause(s);

  // slot_of watches a trainable Variable no op has read yet, as recording
  // would: gradient(v, {v}) is ones, as in TensorFlow.
  const int32_t target_slot = s.slot_of(target);
  std::vector<int32_t> source_slots(sources.size(), -1);
  for (size_t i = 0; i < sources.size(); ++i)
    source_slots[i] = s.slot_of(sources[i]);
  std::vector<Tensor> grads(s.next_slot);
  std::vector<char> keep(s.next_slot, 0);
  for (const int32_t slot : source_slots)
    if (slot >= 0) keep[slot] = 1;
  if (target_slot >= 0) {
    if (output_gradients.empty()) {
      grads[target_slot] = ones_like(target);
    } else {
      const Tensor& seed = output_gradients[0];
      if (!(seed.shape() == target.shape()))
        throw ShapeError("[gradient] expected output_gradients of shape " +
                         target.shape().str() + ", got " + seed.shape().str());
      if (!(seed.device() == target.device()))
        throw DeviceError("[gradient] expected output_gradients on " +
                          target.device().str() + ", got " +
                          seed.device().str());
      if (!is_floating(seed.dtype()))
        throw DTypeError("[gradient] expected floating output_gradients, got " +
                         std::string(dtype_name(seed.dtype())));
      // Gradient rules see every gradient in its tensor's dtype (fit_to);
      // a fused one such as TanhGrad reads both inputs in the first's.
      grads[target_slot] =
          seed.dtype() == target.dtype() ? seed : cast(seed, target.dtype());
    }
  }

  const auto final_gradient = [&](size_t i) {
    const int32_t slot = source_slots[i];
    Tensor g = slot >= 0 ? grads[slot] : Tensor();
    if (!g.defined() && options.unconnected == UnconnectedGradients::zero &&
        sources[i].defined())
      g = zeros_like(sources[i]);
    return g;
  };
  std::optional<ReadyPlan> plan;
  if (options.on_ready) plan = plan_ready(s, source_slots);
  const auto announce = [&](const std::vector<uint32_t>& ready) {
    for (uint32_t i : ready) options.on_ready(i, final_gradient(i));
  };
  if (plan) announce(plan->unused);
  for (size_t k = s.entries.size(); k-- > 0;) {
    run_backward(s.entries[k], grads, keep);
    if (plan) announce(plan->after[k]);
    if (options.after_entry) options.after_entry();
  }

  std::vector<Tensor> result(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) result[i] = final_gradient(i);
  if (!s.persistent) {
    s.entries.clear();
    s.entries.shrink_to_fit();
  }
  return result;
}

// --- NoGradGuard -------------------------------------------------------------

NoGradGuard::NoGradGuard() {
  ++autograd::t_no_grad;
  autograd::refresh_recording();
}
NoGradGuard::~NoGradGuard() {
  --autograd::t_no_grad;
  autograd::refresh_recording();
}

}  // namespace tapeflow
