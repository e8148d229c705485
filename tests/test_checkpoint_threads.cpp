// Checkpoints and threads: a save while other threads train reads each
// variable at one moment, saves into one directory from several threads take
// turns, and save_async writes what the variables held when it was called.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "support/check.hpp"
#include "support/temp_files.hpp"

namespace fs = std::filesystem;

using testing::checkpoint_files;
using testing::TempDir;

namespace {

/** Whether every element of `name` in the archive at `path` is the same. */
bool uniform(const std::string& path, const std::string& name) {
  const auto values = tpf::io::load_npz_map(path).at(name).to_vector<float>();
  for (float v : values)
    if (v != values.front()) return false;
  return true;
}

}  // namespace

TEST_CASE(
    "a save while another thread trains holds each variable at one step") {
  // Each update moves all of w by one, so a snapshot taken mid-update (half
  // of w at one step, half at the next) is not uniform. Every save read w
  // while it was being written before snapshots.
  TempDir dir;
  constexpr int64_t n = int64_t{1} << 18;
  tpf::Variable w(tpf::zeros({n}));
  tpf::Variable m(tpf::zeros({n}));
  tpf::train::Checkpoint ckpt({{"w", w}}, {{"w/m", m}}, 0);
  std::atomic<bool> stop{false};
  std::thread trainer([&] {
    const auto one = tpf::ones({n});
    tpf::optim::SGD sgd(1.0);
    while (!stop) {
      w.assign_add(one);
      sgd.apply_gradients({one}, {m});
    }
  });
  int torn = 0;
  for (int step = 0; step < 20; ++step) {
    ckpt.set_step(step);
    const std::string path = ckpt.save(dir.str());
    torn += !uniform(path, "w") + !uniform(path, "optimizer/w/m");
  }
  stop = true;
  trainer.join();
  CHECK(torn == 0);
}

TEST_CASE("threads saving into one directory take turns") {
  // A save counts files beside the state file as older: another thread's
  // checkpoint, written and not yet listed, was deleted, and the state file
  // named checkpoints that were gone.
  TempDir dir;
  tpf::Variable w(tpf::ones({8}));
  constexpr int kThreads = 4, kSaves = 20, kKeep = 3;
  std::vector<std::thread> savers;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t)
    savers.emplace_back([&, t] {
      tpf::train::Checkpoint ckpt({{"w", w}}, {}, kKeep);
      for (int s = 0; s < kSaves; ++s) {
        ckpt.set_step(s * kThreads + t);
        try {
          ckpt.save(dir.str());
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (auto& t : savers) t.join();
  CHECK(errors == 0);
  const auto files = checkpoint_files(dir.path);
  CHECK(files.size() == kKeep);
  std::ifstream state(dir.path / "checkpoint");
  int listed = 0;
  for (std::string line; std::getline(state, line);)
    if (line.rfind("all_model_checkpoint_paths: \"", 0) == 0) {
      ++listed;
      const std::string name = line.substr(29, line.size() - 30);
      CHECK_MESSAGE(fs::exists(dir.path / name), name);
    }
  CHECK(listed == kKeep);
  const std::string latest = tpf::train::latest_checkpoint(dir.str());
  CHECK(fs::exists(latest));
}

TEST_CASE("save_async writes the values of its call while training goes on") {
  TempDir dir;
  tpf::Variable w(tpf::tensor({1.0f, 2.0f, 3.0f}));
  tpf::Variable count(tpf::tensor<int64_t>({7}));
  tpf::manual_seed(11);
  tpf::train::Checkpoint ckpt({{"w", w}, {"count", count}});
  ckpt.set_step(4);
  std::future<std::string> saved = ckpt.save_async(dir.str());
  const auto rng_at_save = tpf::get_rng_state();
  // Training goes on at once: the file still holds the values of the call.
  w.assign(tpf::tensor({-1.0f, -2.0f, -3.0f}));
  count.assign_add(tpf::tensor<int64_t>({1}));
  (void)tpf::random_uniform({4});
  ckpt.set_step(5);
  const std::string path = saved.get();
  CHECK(path == (dir.path / "ckpt-4.npz").string());
  CHECK(tpf::train::latest_checkpoint(dir.str()) == path);
  const auto file = tpf::io::load_npz_map(path);
  CHECK(file.at("w").to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(file.at("count").to_vector<int64_t>() == std::vector<int64_t>{7});
  CHECK(file.at("__step__").item<int64_t>() == 4);
  const auto rng = file.at("__rng__").to_vector<int64_t>();
  CHECK(static_cast<uint64_t>(rng[1]) == rng_at_save.offset);
  CHECK(w.to_vector<float>() == std::vector<float>{-1, -2, -3});

  // Restoring it brings the values of the call back.
  ckpt.restore(path);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(ckpt.step() == 4);

  // A bad step is refused at the call; a failed write comes out of get().
  ckpt.set_step(-1);
  CHECK_THROWS_WITH_AS(ckpt.save_async(dir.str()),
                       "[Checkpoint::save] expected a step >= 0, got -1",
                       tpf::ValueError);
  ckpt.set_step(6);
  const std::string not_a_dir = dir / "plain";
  std::ofstream(not_a_dir) << "x";
  auto failed = ckpt.save_async(not_a_dir);
  CHECK_THROWS_AS(failed.get(), tpf::IOError);
}

TEST_CASE("save_async outlives its Checkpoint; saves in flight take turns") {
  TempDir dir;
  tpf::Variable w(tpf::zeros({1000}));
  std::vector<std::future<std::string>> pending;
  for (int step = 1; step <= 5; ++step) {
    tpf::train::Checkpoint ckpt({{"w", w}}, {}, 2);
    ckpt.set_step(step);
    pending.push_back(ckpt.save_async(dir.str()));
    w.assign_add(tpf::ones({1000}));
  }
  for (int step = 1; step <= 5; ++step) {
    const std::string path = pending[step - 1].get();
    CHECK(path == (dir.path / ("ckpt-" + std::to_string(step) + ".npz")));
    // The two written last are kept, each holding w as it was at its call.
    if (!fs::exists(path)) continue;
    const std::vector<float> expected(1000, static_cast<float>(step - 1));
    CHECK(tpf::io::load_npz_map(path).at("w").to_vector<float>() == expected);
  }
  CHECK(checkpoint_files(dir.path).size() == 2);
}
