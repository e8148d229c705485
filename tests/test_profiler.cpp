// tpf::profiler: the events of a few ops (names, shapes, device, backend,
// times, bytes), the summary table, the Chrome-trace file, sessions, threads,
// nested (soft-placed) ops and errors.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "support/check.hpp"
#include "support/device.hpp"
#include "support/temp_files.hpp"
#include "tapeflow/profiler.hpp"

namespace {
namespace prof = tpf::profiler;

std::vector<std::string> names_of(const prof::Report& r) {
  std::vector<std::string> names;
  for (const prof::Event& e : r.events()) names.push_back(e.name);
  return names;
}

/** The row of `op` in report.table(): its count column, or -1. */
int64_t table_count(const std::string& table, const std::string& op) {
  std::istringstream lines(table);
  int64_t count = -1;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(op + " ")) continue;
    std::istringstream fields(line.substr(op.size()));
    if (fields >> count) return count;
  }
  return -1;
}

/** Stops a session a failed check left running, so later cases can start. */
struct SessionGuard {
  ~SessionGuard() {
    if (prof::running()) prof::stop();
  }
};
}  // namespace

TEST_CASE(
    "profiler: each op call is an event with its name, shapes, device, "
    "backend, times and bytes") {
  SessionGuard guard;
  const auto a = tpf::ones({2, 3}), b = tpf::ones({3});
  prof::start();
  CHECK(prof::running());
  const auto c = a + b;
  const auto d = tpf::matmul(c, tpf::transpose(c));
  const auto s = tpf::sum(d);
  const prof::Report r = prof::stop();
  CHECK_FALSE(prof::running());
  CHECK(s.item<float>() == doctest::Approx(48.0));

  REQUIRE(names_of(r) ==
          std::vector<std::string>{"add", "transpose", "matmul", "sum"});
  const auto& ev = r.events();
  CHECK(ev[0].input_shapes == std::vector<tpf::Shape>{{2, 3}, {3}});
  CHECK(ev[1].input_shapes == std::vector<tpf::Shape>{{2, 3}});
  CHECK(ev[2].input_shapes == std::vector<tpf::Shape>{{2, 3}, {3, 2}});
  CHECK(ev[0].backend == "xsimd");
  CHECK(ev[1].backend == "view");
  CHECK(ev[2].backend == "libxsmm/onednn");
  // Outputs: 2x3, a view (no memory), 2x2 float32.
  CHECK(ev[0].bytes_allocated == 24);
  CHECK(ev[1].bytes_allocated == 0);
  CHECK(ev[2].bytes_allocated >= 16);
  int64_t previous_end = 0;
  for (const prof::Event& e : ev) {
    CAPTURE(e.name);
    CHECK(e.device == tpf::Device::cpu());
    CHECK(e.depth == 0);
    CHECK(e.thread == ev[0].thread);
    CHECK(e.duration_ns >= 0);
    CHECK(e.start_ns >= previous_end);  // one after the other on one thread
    previous_end = e.start_ns + e.duration_ns;
  }
  CHECK(previous_end <= r.session_ns());
}

TEST_CASE("profiler: the table counts every call, heaviest op first") {
  SessionGuard guard;
  const auto x = tpf::ones({64, 64});
  prof::start();
  auto y = x;
  for (int i = 0; i < 5; ++i) y = y + x;
  for (int i = 0; i < 3; ++i) y = tpf::matmul(y, x) * 1e-3;
  const prof::Report r = prof::stop();
  const std::string table = r.table();
  CAPTURE(table);
  CHECK(table_count(table, "add") == 5);
  CHECK(table_count(table, "matmul") == 3);
  CHECK(table_count(table, "mul") == 3);
  CHECK(table_count(table, "(top level)") ==
        static_cast<int64_t>(r.events().size()));
  CHECK(table_count(table, "add") + table_count(table, "matmul") +
            table_count(table, "mul") ==
        static_cast<int64_t>(r.events().size()));
  // Rows by total time: the first row after the header is the heaviest.
  std::map<std::string, int64_t> totals;
  for (const prof::Event& e : r.events()) totals[e.name] += e.duration_ns;
  const auto heaviest = std::ranges::max_element(
      totals, {}, [](const auto& kv) { return kv.second; });
  std::istringstream lines(table);
  std::string header, first;
  std::getline(lines, header);
  lines >> first;
  CHECK(first == heaviest->first);
  CHECK(header.find("% top") != std::string::npos);
}

TEST_CASE("profiler: the Chrome trace is JSON holding every event") {
  SessionGuard guard;
  const auto x = tpf::ones({4, 5});
  prof::start();
  const auto e = tpf::exp(x);
  const auto y = e + tpf::transpose(tpf::reshape(x, {5, 4}));
  static_cast<void>(tpf::relu(y));
  const prof::Report r = prof::stop();
  testing::TempDir dir;
  const std::string path = dir / "trace.json";
  r.write_chrome_trace(path);
  const auto json = nlohmann::json::parse(testing::slurp(path));
  std::vector<nlohmann::json> ops;
  for (const auto& e : json.at("traceEvents"))
    if (e.at("ph") == "X") ops.push_back(e);
  REQUIRE(ops.size() == r.events().size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const prof::Event& e = r.events()[i];
    CAPTURE(e.name);
    CHECK(ops[i].at("name") == e.name);
    CHECK(ops[i].at("ts").get<double>() ==
          doctest::Approx(e.start_ns / 1e3).epsilon(1e-9));
    CHECK(ops[i].at("dur").get<double>() >= 0.0);
    CHECK(ops[i].at("tid") == e.thread);
    const auto& args = ops[i].at("args");
    CHECK(args.at("device") == "cpu:0");
    CHECK(args.at("backend") == e.backend);
    CHECK(args.at("bytes_allocated") == e.bytes_allocated);
    REQUIRE(args.at("input_shapes").size() == e.input_shapes.size());
    for (size_t k = 0; k < e.input_shapes.size(); ++k)
      CHECK(args.at("input_shapes")[k].get<std::vector<int64_t>>() ==
            std::vector<int64_t>(e.input_shapes[k].begin(),
                                 e.input_shapes[k].end()));
  }
  CHECK(names_of(r).front() == "exp");
  CHECK(names_of(r).back() == "relu");
  // A directory that does not exist: IOError, no file left behind.
  CHECK_THROWS_AS(r.write_chrome_trace(dir / "missing/trace.json"),
                  tpf::IOError);
}

TEST_CASE(
    "profiler: sessions start and stop twice; ops outside one are not "
    "recorded") {
  SessionGuard guard;
  const auto x = tpf::ones({3});
  prof::start();
  static_cast<void>(x + x);
  const prof::Report first = prof::stop();
  static_cast<void>(tpf::exp(x));  // between sessions: not recorded
  prof::start();
  static_cast<void>(x * x);
  static_cast<void>(x * x);
  const prof::Report second = prof::stop();
  CHECK(names_of(first) == std::vector<std::string>{"add"});
  CHECK(names_of(second) == std::vector<std::string>{"mul", "mul"});
}

TEST_CASE("profiler: errors name the profiler; a failed op is not recorded") {
  SessionGuard guard;
  CHECK_THROWS_WITH_AS(prof::stop(),
                       doctest::Contains("[profiler] expected a session"),
                       tpf::ValueError);
  prof::start();
  CHECK_THROWS_WITH_AS(prof::start(),
                       doctest::Contains("[profiler] expected no session"),
                       tpf::ValueError);
  CHECK_THROWS_AS(tpf::matmul(tpf::ones({2, 3}), tpf::ones({2, 3})),
                  tpf::ShapeError);
  static_cast<void>(tpf::ones({2}) + tpf::ones({2}));
  const prof::Report r = prof::stop();
  std::vector<std::string> names = names_of(r);
  CHECK(std::ranges::find(names, "matmul") == names.end());
  REQUIRE(std::ranges::find(names, "add") != names.end());
  for (const prof::Event& e : r.events()) CHECK(e.depth == 0);
  try {
    prof::stop();
    FAIL("stop() without a session did not throw");
  } catch (const tpf::Error& e) {
    CHECK(std::string(e.what()).starts_with("[profiler]"));
  }
}

TEST_CASE("profiler: ops on other threads, exited before stop, are kept") {
  SessionGuard guard;
  const auto x = tpf::ones({8});
  prof::start();
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w)
    workers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) static_cast<void>(x * x);
    });
  for (std::thread& t : workers) t.join();
  static_cast<void>(x + x);
  const prof::Report r = prof::stop();
  std::map<uint32_t, int> per_thread;
  for (const prof::Event& e : r.events()) ++per_thread[e.thread];
  CHECK(r.events().size() == 151);
  CHECK(per_thread.size() == 4);
  int workers_with_50 = 0;
  for (const auto& [thread, n] : per_thread) workers_with_50 += n == 50;
  CHECK(workers_with_50 == 3);
}

TEST_CASE("profiler: a soft-placed op's copies are nested events") {
  SessionGuard guard;
  testing::install_host_device();
  const auto devices = testing::test_devices();
  if (devices.backend != "test") return;  // a real GPU has exp's kernel
  const tpf::Device dev = devices.devices.at(0);
  const auto x = tpf::ones({2, 2}).to(dev);
  prof::start();
  static_cast<void>(tpf::exp(x));
  const prof::Report r = prof::stop();
  const auto& ev = r.events();
  const auto outer =
      std::ranges::find_if(ev, [](const auto& e) { return e.name == "exp"; });
  REQUIRE(outer != ev.end());
  CHECK(outer->device == dev);
  CHECK(outer->backend == "xsimd (soft placement)");
  CHECK(outer->depth == 0);
  int nested = 0;
  for (const prof::Event& e : ev) {
    if (e.depth == 0) continue;
    ++nested;
    CHECK(e.start_ns >= outer->start_ns);
    CHECK(e.start_ns + e.duration_ns <= outer->start_ns + outer->duration_ns);
  }
  CHECK(nested >= 2);  // the input to the host, the result back
}

TEST_CASE("profiler: an optimizer's fused update is an event") {
  SessionGuard guard;
  tpf::Variable w(tpf::ones({4, 3}));
  tpf::optim::Adam adam(0.1);
  const std::vector<tpf::Tensor> grads{tpf::ones({4, 3})};
  prof::start();
  adam.apply_gradients(grads, std::vector<tpf::Variable>{w});
  const auto report = prof::stop();
  const auto names = names_of(report);
  const auto it = std::find(names.begin(), names.end(), "apply_adam");
  REQUIRE(it != names.end());
  const prof::Event& e = report.events()[it - names.begin()];
  CHECK(e.device == tpf::Device::cpu());
  CHECK(e.input_shapes.size() == 4);  // w, g, m, v
  CHECK(e.input_shapes[0] == tpf::Shape{4, 3});
  CHECK(e.duration_ns >= 0);
  CHECK(w.to_vector<float>()[0] < 1.0f);
}
