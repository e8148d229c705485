// GradientOptions: on_ready reports each source's gradient once, as soon as
// the reverse walk has passed the source's first forward use; after_entry
// runs after every recorded op. Distributed data parallel builds on both.
#include "support/check.hpp"

#define CHECK_EXACT(a, b) CHECK_CLOSE(a, b, 0.0, 0.0)

namespace {

struct Event {
  size_t source;
  size_t entries_done;  // after_entry calls seen before it
  tpf::Tensor grad;
};

struct Recorder {
  std::vector<Event> events;
  size_t entries = 0;
  tpf::GradientOptions options() {
    tpf::GradientOptions o;
    o.on_ready = [this](size_t i, const tpf::Tensor& g) {
      events.push_back({i, entries, g});
    };
    o.after_entry = [this] { ++entries; };
    return o;
  }
};

}  // namespace

TEST_CASE("on_ready follows the reverse of first use, with final values") {
  // Forward: h = a * x (op 0), k = h * b (op 1), y = k + a (op 2), sum (op 3).
  // Walking back: a's first use is op 0, b's op 1; c is never used.
  tpf::Variable a(tpf::tensor({2.0, 3.0}));
  tpf::Variable b(tpf::tensor({5.0, 7.0}));
  tpf::Variable c(tpf::tensor({1.0}));
  const auto x = tpf::tensor({11.0, 13.0});
  tpf::GradientTape tape;
  const auto h = a * x;
  const auto k = h * b;
  const auto loss = tpf::sum(k + a);
  REQUIRE(tape.size() == 4);
  Recorder r;
  const auto grads = tape.gradient(loss, {a, b, c}, r.options());
  REQUIRE(r.events.size() == 3);
  CHECK(r.events[0].source == 2);  // unused: before the walk
  CHECK(r.events[0].entries_done == 0);
  CHECK_FALSE(r.events[0].grad.defined());
  // on_ready comes right after its op's backward, before that op's
  // after_entry: b after ops 3, 2, 1 were walked, a after op 0.
  CHECK(r.events[1].source == 1);
  CHECK(r.events[1].entries_done == 2);
  CHECK(r.events[2].source == 0);
  CHECK(r.events[2].entries_done == 3);
  CHECK(r.entries == 4);
  // dloss/da = x * b + 1, dloss/db = a * x: what gradient() returns, too.
  CHECK_EXACT(r.events[2].grad, tpf::tensor({56.0, 92.0}));
  CHECK_EXACT(r.events[1].grad, tpf::tensor({22.0, 39.0}));
  CHECK_EXACT(grads[0], r.events[2].grad);
  CHECK_EXACT(grads[1], r.events[1].grad);
  CHECK_FALSE(grads[2].defined());
}

TEST_CASE("on_ready honours unconnected=zero and repeated sources") {
  tpf::Variable a(tpf::tensor({2.0}));
  tpf::Variable unused(tpf::tensor({4.0, 4.0}));
  tpf::GradientTape tape;
  const auto loss = tpf::sum(a * a);
  Recorder r;
  auto options = r.options();
  options.unconnected = tpf::UnconnectedGradients::zero;
  const auto grads = tape.gradient(loss, {a, unused, a}, options);
  REQUIRE(r.events.size() == 3);
  CHECK(r.events[0].source == 1);
  CHECK_EXACT(r.events[0].grad, tpf::tensor({0.0, 0.0}));
  CHECK(r.events[1].source == 0);
  CHECK(r.events[2].source == 2);
  CHECK_EXACT(r.events[1].grad, tpf::tensor({4.0}));
  CHECK_EXACT(grads[2], tpf::tensor({4.0}));
}

TEST_CASE("without hooks gradient() is unchanged; a throwing hook propagates") {
  tpf::Variable a(tpf::tensor({3.0}));
  {
    tpf::GradientTape tape;
    const auto loss = tpf::sum(a * a);
    CHECK_EXACT(tape.gradient(loss, {a}, tpf::GradientOptions{})[0],
                tpf::tensor({6.0}));
  }
  tpf::GradientTape tape;
  const auto loss = tpf::sum(a * a);
  tpf::GradientOptions o;
  o.on_ready = [](size_t, const tpf::Tensor&) {
    throw tpf::ValueError("[hook] stop");
  };
  CHECK_THROWS_AS(tape.gradient(loss, {a}, o), tpf::ValueError);
}
