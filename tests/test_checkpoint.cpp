// tpf::train::Checkpoint: round trips, max_to_keep, validation, and a child
// process killed at random moments of a save loop.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <thread>

#include "support/check.hpp"
#include "support/temp_files.hpp"

namespace fs = std::filesystem;

using testing::checkpoint_files;
using testing::TempDir;

TEST_CASE("Checkpoint saves and restores variables, slots, step and RNG") {
  TempDir dir;
  tpf::manual_seed(3);
  tpf::Variable w(tpf::random_normal({4, 3}));
  tpf::Variable b(tpf::zeros({3}, tpf::float64));
  tpf::Variable m(tpf::ones({4, 3}));
  tpf::Variable count(tpf::tensor<int64_t>({7}));
  tpf::train::Checkpoint ckpt({{"dense/kernel", w}, {"dense/bias", b}},
                              {{"dense/kernel/m", m}, {"count", count}});
  ckpt.set_step(12);
  const std::string path = ckpt.save(dir.str());
  CHECK(path == (dir.path / "ckpt-12.npz").string());
  CHECK(tpf::train::latest_checkpoint(dir.str()) == path);
  const auto saved_w = w.to_vector<float>();
  const auto next_random = tpf::random_uniform({5}).to_vector<float>();

  // The archive is a plain .npz with reserved names for step and RNG.
  const auto raw = tpf::io::load_npz_map(path);
  CHECK(raw.count("optimizer/dense/kernel/m") == 1);
  CHECK(raw.at("__step__").item<int64_t>() == 12);
  CHECK(raw.at("__rng__").shape() == tpf::Shape{2});

  w.assign(tpf::zeros({4, 3}));
  m.assign(tpf::zeros({4, 3}));
  count.assign(tpf::tensor<int64_t>({0}));
  tpf::manual_seed(99);
  ckpt.set_step(0);
  ckpt.restore(path);
  CHECK(ckpt.step() == 12);
  CHECK(w.to_vector<float>() == saved_w);
  CHECK(m.to_vector<float>() == std::vector<float>(12, 1.f));
  CHECK(count.item<int64_t>() == 7);
  CHECK(tpf::random_uniform({5}).to_vector<float>() == next_random);

  // A model-only checkpoint object restores from the full file when partial
  // restores are allowed.
  tpf::Variable w2(tpf::zeros({4, 3}));
  tpf::train::Checkpoint model_only({{"dense/kernel", w2}, {"dense/bias", b}});
  CHECK_THROWS_AS(model_only.restore(path), tpf::ValueError);
  model_only.restore(path, /*expect_partial=*/true);
  CHECK(w2.to_vector<float>() == saved_w);
}

TEST_CASE(
    "Checkpoint::restore reports every mismatch at once, changes nothing") {
  TempDir dir;
  tpf::Variable a(tpf::ones({2, 2}));
  tpf::Variable b(tpf::ones({3}));
  tpf::Variable c(tpf::ones({3}, tpf::float64));
  tpf::train::Checkpoint ckpt({{"a", a}, {"b", b}, {"c", c}});
  const std::string path = ckpt.save(dir.str());

  tpf::Variable a2(tpf::zeros({2, 2}));  // fine
  tpf::Variable b2(tpf::zeros({4}));     // wrong shape
  tpf::Variable c2(tpf::zeros({3}));     // wrong dtype
  tpf::Variable d2(tpf::zeros({1}));     // not in the file
  tpf::train::Checkpoint other({{"a", a2}, {"b", b2}, {"c", c2}, {"d", d2}});
  try {
    other.restore(path);
    FAIL("expected ValueError");
  } catch (const tpf::ValueError& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.rfind("[Checkpoint::restore] expected", 0) == 0, msg);
    CHECK_MESSAGE(msg.find(path) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("3 mismatches") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("\"b\" expected (4,) float32, got (3,) float32") !=
                      std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find("\"c\" expected (3,) float32, got (3,) float64") !=
                      std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find("\"d\" is missing") != std::string::npos, msg);
  }
  CHECK(a2.to_vector<float>() == std::vector<float>(4, 0.f));  // untouched

  CHECK_THROWS_AS(tpf::train::Checkpoint({{"x", a}, {"x", b}}),
                  tpf::ValueError);
  CHECK_THROWS_AS(tpf::train::Checkpoint({{"__step__", a}}), tpf::ValueError);
  CHECK_THROWS_AS(tpf::train::Checkpoint({{"x", tpf::Variable()}}),
                  tpf::ValueError);
  CHECK_THROWS_AS(ckpt.restore((dir.path / "nope.npz").string()), tpf::IOError);
}

TEST_CASE("max_to_keep and latest_checkpoint") {
  TempDir dir;
  tpf::Variable v(tpf::zeros({2}));
  tpf::train::Checkpoint ckpt({{"v", v}}, {}, /*max_to_keep=*/3);
  CHECK(tpf::train::latest_checkpoint(dir.str()).empty());
  CHECK(tpf::train::latest_checkpoint((dir.path / "none").string()).empty());
  for (int64_t step : {1, 2, 9, 10, 100}) {
    ckpt.set_step(step);
    ckpt.save(dir.str());
  }
  CHECK(checkpoint_files(dir.path) ==
        std::vector<std::string>{"ckpt-10.npz", "ckpt-100.npz", "ckpt-9.npz"});
  // Temporary and foreign files are ignored (by step number, not by name).
  std::ofstream(dir.path / "ckpt-500.npz.tmp-123") << "partial";
  std::ofstream(dir.path / "ckpt-x.npz") << "?";
  std::ofstream(dir.path / "ckpt-600.npz.tmp-99.Ab12Cd") << "partial";
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-100.npz").string());
  // A truncated newest checkpoint is an IOError, not a crash.
  const std::string latest = tpf::train::latest_checkpoint(dir.str());
  const auto size = fs::file_size(latest);
  fs::resize_file(latest, size / 2);
  CHECK_THROWS_AS(ckpt.restore(latest), tpf::IOError);
  // A corrupted one too.
  fs::resize_file(latest, size);  // zero-filled tail
  CHECK_THROWS_AS(ckpt.restore(latest), tpf::IOError);
}

TEST_CASE("the latest checkpoint is the one saved last, as TensorFlow's") {
  TempDir dir;
  tpf::Variable v(tpf::zeros({2}));
  tpf::train::Checkpoint ckpt({{"v", v}}, {}, /*max_to_keep=*/3);
  // Training rolled back: ckpt-100 diverged, ckpt-50 was restored, and the
  // run goes on from there.
  for (int64_t step : {50, 100, 60, 70}) {
    ckpt.set_step(step);
    v.assign(tpf::full({2}, double(step)));
    ckpt.save(dir.str());
  }
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-70.npz").string());
  // The oldest saved went (ckpt-50), not the lowest step.
  CHECK(checkpoint_files(dir.path) ==
        std::vector<std::string>{"ckpt-100.npz", "ckpt-60.npz", "ckpt-70.npz"});
  CHECK(testing::slurp(dir / "checkpoint") ==
        "model_checkpoint_path: \"ckpt-70.npz\"\n"
        "all_model_checkpoint_paths: \"ckpt-100.npz\"\n"
        "all_model_checkpoint_paths: \"ckpt-60.npz\"\n"
        "all_model_checkpoint_paths: \"ckpt-70.npz\"\n");
  ckpt.set_step(80);
  ckpt.save(dir.str());
  CHECK(checkpoint_files(dir.path) ==
        std::vector<std::string>{"ckpt-60.npz", "ckpt-70.npz", "ckpt-80.npz"});
  // Saving a step again makes it the latest.
  ckpt.set_step(60);
  ckpt.save(dir.str());
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-60.npz").string());
  // A listed file deleted by hand is skipped.
  fs::remove(dir.path / "ckpt-60.npz");
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-80.npz").string());

  // Files the list does not name (a directory from before the state file,
  // or a save killed before it updated the list) count as older, by step.
  std::ofstream(dir.path / "checkpoint") << "garbage\n";
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-80.npz").string());
  fs::remove(dir.path / "checkpoint");
  fs::copy_file(dir.path / "ckpt-70.npz", dir.path / "ckpt-5.npz");
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-80.npz").string());
  ckpt.set_step(90);
  ckpt.save(dir.str());
  CHECK(checkpoint_files(dir.path) ==
        std::vector<std::string>{"ckpt-70.npz", "ckpt-80.npz", "ckpt-90.npz"});
}

TEST_CASE("19-digit steps are found as the latest, and kept by max_to_keep") {
  TempDir dir;
  tpf::Variable v(tpf::zeros({2}));
  tpf::train::Checkpoint ckpt({{"v", v}}, {}, /*max_to_keep=*/2);
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (int64_t step : {int64_t{5}, huge - 1, huge}) {
    ckpt.set_step(step);
    ckpt.save(dir.str());
  }
  CHECK(checkpoint_files(dir.path) ==
        std::vector<std::string>{"ckpt-9223372036854775806.npz",
                                 "ckpt-9223372036854775807.npz"});
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-9223372036854775807.npz").string());
  // A number past int64 is no checkpoint of ours.
  std::ofstream(dir.path / "ckpt-99999999999999999999.npz") << "?";
  CHECK(tpf::train::latest_checkpoint(dir.str()) ==
        (dir.path / "ckpt-9223372036854775807.npz").string());
}

TEST_CASE(
    "a process killed at random moments of save leaves a restorable "
    "checkpoint") {
  const char* helper = std::getenv("TPF_IO_HELPER");
  if (!helper) {
    MESSAGE("TPF_IO_HELPER is not set (run through meson test): skipped");
    return;
  }
  TempDir dir;
  std::mt19937 rng(12345);
  tpf::Variable w(tpf::zeros({256, 1024}));
  tpf::Variable b(tpf::zeros({1000}, tpf::float64));
  tpf::Variable m(tpf::zeros({256, 1024}));
  tpf::train::Checkpoint ckpt({{"dense/kernel", w}, {"dense/bias", b}},
                              {{"dense/kernel/m", m}}, 2);
  int64_t last_step = 0;
  int killed_mid_write = 0;  // rounds that left a temporary file behind
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      execl(helper, helper, "save-loop", dir.str().c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Let the child finish one save of its own (so that it is in its save
    // loop), then kill it at a random moment: saves take a few ms each.
    const std::string before = tpf::train::latest_checkpoint(dir.str());
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (tpf::train::latest_checkpoint(dir.str()) == before &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::this_thread::sleep_for(std::chrono::microseconds(
        std::uniform_int_distribution<int>(0, 60000)(rng)));
    REQUIRE(kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK_MESSAGE(WIFSIGNALED(status), ("the child exited by itself: status " +
                                        std::to_string(status)));

    const std::string latest = tpf::train::latest_checkpoint(dir.str());
    REQUIRE_FALSE(latest.empty());
    ckpt.restore(latest);  // must not throw
    const int64_t s = ckpt.step();
    CHECK(s >= last_step);
    last_step = s;
    // Content is exactly the state the child saved at step s.
    CHECK(
        tpf::max(tpf::abs(w - tpf::full(w.shape(), double(s)))).item<float>() ==
        0.f);
    CHECK(tpf::max(tpf::abs(b - tpf::full(b.shape(), s * 0.5, tpf::float64)))
              .item<double>() == 0.0);
    CHECK(
        tpf::max(tpf::abs(m + tpf::full(m.shape(), double(s)))).item<float>() ==
        0.f);
    CHECK(tpf::get_rng_state() ==
          tpf::RngState{777, static_cast<uint64_t>(s) * 3});
    // Every finished checkpoint restores. A kill between the rename and the
    // clean-up leaves one more than max_to_keep, and consecutive kills there
    // can leave several: the next completed save trims them (checked below).
    for (const auto& name : checkpoint_files(dir.path)) {
      if (name.find(".tmp-") != std::string::npos) {
        ++killed_mid_write;
        continue;
      }
      CHECK_NOTHROW(tpf::io::load_npz((dir.path / name).string()));
    }
  }
  ckpt.save(dir.str());
  int finished = 0;
  for (const auto& name : checkpoint_files(dir.path))
    finished += name.find(".tmp-") == std::string::npos;
  CHECK(finished == 2);
  MESSAGE("steps reached after 12 kills: " << last_step
                                           << "; temporary files "
                                              "left by a kill: "
                                           << killed_mid_write);
  CHECK(last_step >= 12);
}
