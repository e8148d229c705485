// Parameter servers under mpirun: 1 ps + 2 workers (np 3) and 2 ps + 2
// workers (np 4); ClusterSpec and the local server without mpirun.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "support/check.hpp"
#include "tapeflow/dist.hpp"

namespace dist = tpf::dist;

namespace {

int num_ps() {
  return dist::world().size() >= 4 ? 2 : 1;
}
bool cluster_run() {
  return dist::world().size() >= 3;
}

/** The seeds' Y = 2X + 10, batch 16 per step, data by worker and step. */
tpf::Tensor loss_of(const tpf::Variable& w, const tpf::Variable& b, int worker,
                    int step) {
  const auto x = tpf::stateless_random_uniform({16, 1}, 1000 * worker + step);
  const auto y = x * 2.0 + 10.0;
  return tpf::mean(tpf::nn::mean_squared_error(y, tpf::matmul(x, w) + b));
}

struct Trained {
  tpf::Variable w{tpf::zeros({1, 1})}, b{tpf::zeros({1})};
  dist::PsStats stats;
  bool ps = false;
};

Trained train(dist::PsOptions options, int steps, bool sleepy_worker_1) {
  dist::Server server(dist::ClusterSpec::from_world(num_ps()));
  Trained t;
  dist::ParameterClient client(server, options);
  client.create({{"w", t.w}, {"b", t.b}},
                [] { return std::make_unique<tpf::optim::SGD>(0.3); });
  if (server.job_name() == "ps") {
    server.join();
    t.ps = true;
    t.stats = client.stats();
    return t;
  }
  const std::vector<tpf::Variable> params = {t.w, t.b};
  for (int step = 0; step < steps; ++step) {
    client.pull(params);
    if (sleepy_worker_1 && server.task_index() == 1) usleep(2000);
    tpf::GradientTape tape;
    const auto loss = loss_of(t.w, t.b, server.task_index(), step);
    client.push(tape.gradient(loss, {t.w, t.b}));
  }
  CHECK(client.clock() == steps);
  client.pull(params);  // the values after this worker's last push
  client.done();
  return t;
}

}  // namespace

TEST_CASE("ClusterSpec: JSON, flags, ranks; Server checks the flags") {
  const std::string path =
      "/tmp/tpf_cluster_" + std::to_string(getpid()) + ".json";
  std::ofstream(path)
      << R"({"worker": ["h2:2222", "h3:2222"], "ps": ["h1:2222"]})";
  const auto c = dist::ClusterSpec::from_json(path);
  std::remove(path.c_str());
  CHECK(c.jobs() == std::vector<std::string>{"ps", "worker"});
  CHECK(c.size() == 3);
  CHECK(c.task_of_rank(0).job_name == "ps");
  CHECK(c.task_of_rank(2).task_index == 1);
  CHECK(c.rank_of({"worker", 0}) == 1);
  const auto f = dist::ClusterSpec::from_flags("a:1,b:1", "c:1");
  CHECK(f.num_tasks("ps") == 2);
  CHECK(f.job_tasks("worker") == std::vector<std::string>{"c:1"});
  CHECK_THROWS_AS(dist::ClusterSpec::from_json("/nonexistent.json"),
                  tpf::IOError);
  CHECK_THROWS_AS(c.rank_of({"worker", 2}), tpf::ValueError);
  // A job listed twice: nlohmann kept the last list without a word.
  std::ofstream(path) << R"({"ps": ["h1:1"], "ps": ["h2:1", "h3:1"]})";
  testing::expect_error<tpf::ValueError>(
      [&] { dist::ClusterSpec::from_json(path); },
      "[ClusterSpec] expected {\"job\": [\"host:port\", ...], ...} in \"" +
          path + "\", got: the job \"ps\" twice");
  std::remove(path.c_str());

  char prog[] = "train", a[] = "--job_name=worker", b[] = "--task_index",
       d[] = "1";
  char* argv[] = {prog, a, b, d};
  const auto task = dist::task_from(4, argv);
  CHECK(task.job_name == "worker");
  CHECK(task.task_index == 1);
  for (const char* value : {"--task_index=x", "--task_index=+3",
                            "--task_index= 3", "--task_index=-1"}) {
    CAPTURE(value);
    std::string bad = value;
    char* argv2[] = {prog, bad.data()};
    CHECK_THROWS_AS(dist::task_from(2, argv2), tpf::ValueError);
  }
  // A flag with its value missing took the next flag as its value.
  char job[] = "--job_name", index[] = "--task_index=2";
  char* argv3[] = {prog, job, index};
  testing::expect_error<tpf::ValueError>(
      [&] { dist::task_from(3, argv3); },
      "[task_from] expected a value after --job_name, got the flag "
      "\"--task_index=2\"");

  if (!cluster_run()) return;
  const auto cluster = dist::ClusterSpec::from_world(num_ps());
  const auto mine = cluster.task_of_rank(dist::world().rank());
  dist::Server server(cluster, mine);  // agreeing flags are fine
  CHECK(server.is_chief() ==
        (mine.job_name == "worker" && mine.task_index == 0));
  testing::expect_error<tpf::ValueError>(
      [&] {
        dist::Server(cluster, {"ps", 7});
      },
      "[Server] expected --job_name=" + mine.job_name);
}

TEST_CASE("asynchronous training converges to W = 2, b = 10") {
  if (!cluster_run()) return;
  const Trained t = train({}, 150, false);
  if (t.ps) {
    CHECK(t.stats.applied == 2 * 150);
    CHECK(t.stats.dropped == 0);
    return;
  }
  CHECK(t.w.item<double>() == doctest::Approx(2.0).epsilon(0.05));
  CHECK(t.b.item<double>() == doctest::Approx(10.0).epsilon(0.01));
}

TEST_CASE("a staleness bound holds the fast worker back") {
  if (!cluster_run()) return;
  const Trained t = train({.staleness_bound = 2}, 40, true);
  if (t.ps) {
    // A pull waits while its worker is more than 2 pushes ahead; its next
    // push can then make the gap 3.
    CHECK(t.stats.max_clock_gap <= 3);
    CHECK(t.stats.applied == 2 * 40);
  }
}

TEST_CASE("pushes older than drop_stale_after are dropped, the rest applied") {
  if (!cluster_run()) return;
  const Trained t = train({.drop_stale_after = 0}, 30, true);
  if (t.ps) {
    CHECK(t.stats.applied + t.stats.dropped == 2 * 30);
    CHECK(t.stats.applied >= 30);
  }
}

TEST_CASE(
    "SyncReplicas: R gradients per step in worker order, the rest dropped") {
  // np 3: 1 ps + 2 workers, R = T = 2 (every step waits for both);
  // np 4: 1 ps + 3 workers, R = 2 of T = 3 (one backup worker).
  if (!cluster_run()) return;
  dist::Server server(dist::ClusterSpec::from_world(1));
  const int workers = server.cluster().num_tasks("worker");
  tpf::Variable w(tpf::zeros({1, 1})), b(tpf::zeros({1}));
  dist::ParameterClient client(
      server, {.replicas_to_aggregate = 2, .total_num_replicas = workers});
  client.create({{"w", w}, {"b", b}},
                [] { return std::make_unique<tpf::optim::SGD>(0.3); });
  constexpr int kSteps = 150;
  if (server.job_name() == "ps") {
    server.join();
    const dist::PsStats st = client.stats();
    CHECK(st.applied >= kSteps);
    if (workers == 2) {
      CHECK(st.applied == kSteps);  // both workers' pushes, every step
      CHECK(st.dropped == 0);
    } else {
      CHECK(st.dropped > 0);  // the backup's late gradients
    }
    return;
  }
  dist::SyncReplicasOptimizer sync(client);
  client.pull({w, b});
  int64_t last = sync.global_step();
  // Until the global step, not a count of this worker's steps: a backup
  // worker takes fewer of them.
  while (last < kSteps) {
    tpf::GradientTape tape;
    const auto loss = loss_of(w, b, server.task_index(), int(last));
    sync.apply_gradients(tape.gradient(loss, {w, b}), {w, b});
    CHECK(sync.global_step() > last);  // never runs ahead of the ps
    last = sync.global_step();
  }
  CHECK(last == kSteps);
  CHECK(w.item<double>() == doctest::Approx(2.0).epsilon(0.05));
  CHECK(b.item<double>() == doctest::Approx(10.0).epsilon(0.01));
  client.done();
  testing::expect_error<tpf::ValueError>(
      [&] { dist::ParameterClient(server, {.replicas_to_aggregate = 9}); },
      "[ParameterClient] expected replicas_to_aggregate <= total_num_replicas");
}

TEST_CASE("placement: round robin, greedy by bytes, and PsScope") {
  if (!cluster_run()) return;
  dist::Server server(dist::ClusterSpec::from_world(num_ps()));
  const int ps_tasks = num_ps();
  tpf::Variable a(tpf::zeros({10})), big(tpf::zeros({1000})),
      c(tpf::zeros({10}));
  tpf::Variable pinned;
  {
    dist::PsScope on(ps_tasks - 1);
    pinned = tpf::Variable(tpf::zeros({5}));
  }
  tpf::Variable after(tpf::zeros({5}));  // made outside the scope
  dist::ParameterClient rr(server);
  rr.create({{"a", a}, {"big", big}, {"c", c}, {"pinned", pinned}},
            [] { return std::make_unique<tpf::optim::SGD>(0.1); });
  CHECK(rr.owner(3) == ps_tasks - 1);
  CHECK(rr.owner(0) == 0);
  CHECK(rr.owner(2) == 0);  // a, big, c: tasks 0, 1 % P, 2 % P
  dist::ParameterClient greedy(server);
  greedy.create(
      {{"a", a}, {"big", big}, {"c", c}, {"after", after}},
      [] { return std::make_unique<tpf::optim::SGD>(0.1); },
      dist::Placement::greedy_bytes());
  if (ps_tasks == 2) {
    CHECK(greedy.owner(1) == 0);  // the largest first, onto an empty task
    CHECK(greedy.owner(0) == 1);  // then the lightest task each time
    CHECK(greedy.owner(2) == 1);
  }
  CHECK_THROWS_AS(dist::PsScope(-1), tpf::ValueError);
  if (server.job_name() == "ps") {
    server.join();  // rr's requests, then greedy's
  } else {
    rr.done();
    greedy.done();
  }
}

TEST_CASE("a large variable split across the ps tasks pulls and pushes whole") {
  if (!cluster_run()) return;
  dist::Server server(dist::ClusterSpec::from_world(num_ps()));
  const int workers = server.cluster().num_tasks("worker");
  // 6 x 3 float32 = 72 bytes, >= 2 * 8: one part per ps task (rows 3 + 3).
  tpf::Variable big(tpf::reshape(tpf::arange(0.0, 18.0), {6, 3}));
  tpf::Variable small(tpf::zeros({2}));
  dist::ParameterClient ps(server, {.replicas_to_aggregate = workers});
  ps.create(
      {{"big", big}, {"small", small}},
      [] { return std::make_unique<tpf::optim::SGD>(1.0); },
      dist::Placement::greedy_bytes({.min_shard_bytes = 8}));
  CHECK(ps.parts(0) == num_ps());
  CHECK(ps.parts(1) == 1);
  if (server.job_name() == "ps") {
    server.join();
    return;
  }
  dist::SyncReplicasOptimizer sync(ps);
  const std::vector<tpf::Variable> params = {big, small};
  ps.pull(params);
  for (int step = 0; step < 10; ++step) {
    // Row r of the gradient is r + 1: each part must land on its rows.
    const auto g =
        tpf::broadcast_to(tpf::reshape(tpf::arange(1.0, 7.0), {6, 1}), {6, 3});
    sync.apply_gradients({g, tpf::ones({2})}, params);
  }
  const auto want =
      tpf::reshape(tpf::arange(0.0, 18.0), {6, 3}) -
      tpf::broadcast_to(tpf::reshape(tpf::arange(1.0, 7.0), {6, 1}), {6, 3}) *
          10.0;
  CHECK_CLOSE(big, want, 0.0, 1e-4);
  CHECK_CLOSE(small, tpf::full({2}, -10.0), 0.0, 1e-5);
  ps.done();
}

TEST_CASE("create compares the variables on every task; done() is final") {
  if (!cluster_run()) return;
  dist::Server server(dist::ClusterSpec::from_world(num_ps()));
  tpf::Variable w(tpf::zeros({4})), c(tpf::zeros({3}));
  const auto sgd = [] { return std::make_unique<tpf::optim::SGD>(0.5); };
  dist::ParameterClient client(server);
  // Worker 1 with an extra variable: the ps read its bytes as w's gradient.
  // Every task throws, and the client stays as it was.
  dist::NamedVariables listed = {{"w", w}};
  const bool odd = server.job_name() == "worker" && server.task_index() == 1;
  if (odd) listed.insert(listed.begin(), {"c", c});
  testing::expect_error<dist::DistError>(
      [&] { client.create(listed, sgd); },
      "[create] expected the same variables (their count, names, dtypes, "
      "shapes and placement) on every rank: rank 0 has 1, rank " +
          std::to_string(num_ps() + 1) + " has 2");
  client.create({{"w", w}}, sgd);
  if (server.job_name() == "ps") {
    server.join();
    return;
  }
  CHECK_THROWS_AS(client.pull({tpf::Variable(tpf::zeros({2, 2}))}),
                  tpf::ShapeError);
  CHECK_THROWS_AS(client.pull({tpf::Variable(tpf::zeros({4}, tpf::int32))}),
                  tpf::DTypeError);
  client.pull({w});
  client.push({tpf::ones({4})});
  client.done();
  testing::expect_error<tpf::ValueError>(
      [&] { client.push({tpf::ones({4})}); },
      "[push] expected no push after done(), got one");
  testing::expect_error<tpf::ValueError>(
      [&] { client.pull({w}); }, "[pull] expected no pull after done()");
}

TEST_CASE("a local server: one process, both roles, no transport") {
  dist::Server server = dist::Server::create_local_server();
  CHECK(server.is_local());
  CHECK(server.is_chief());
  tpf::Variable w(tpf::zeros({1, 1})), b(tpf::zeros({1}));
  dist::ParameterClient client(server);
  testing::expect_error<tpf::ValueError>(
      [&] {
        client.create({{"w", w}, {"b", b}}, {});
      },
      "[create] expected an optimizer factory, got an empty std::function");
  testing::expect_error<tpf::ValueError>(
      [&] {
        client.create({{"w", w}, {"b", b}},
                      [] { return std::unique_ptr<tpf::optim::Optimizer>(); });
      },
      "[create] expected the optimizer factory to return an optimizer");
  client.create({{"w", w}, {"b", b}},
                [] { return std::make_unique<tpf::optim::SGD>(0.3); });
  for (int step = 0; step < 300; ++step) {
    client.pull({w, b});
    tpf::GradientTape tape;
    client.push(tape.gradient(loss_of(w, b, 0, step), {w, b}));
  }
  CHECK(w.item<double>() == doctest::Approx(2.0).epsilon(0.05));
  CHECK(b.item<double>() == doctest::Approx(10.0).epsilon(0.01));
  CHECK_THROWS_AS(client.push({tpf::zeros({2})}), tpf::ValueError);
  CHECK_THROWS_AS(client.push({tpf::zeros({2}), tpf::zeros({1})}),
                  tpf::ShapeError);
  CHECK_THROWS_AS(server.join(), tpf::ValueError);
}
