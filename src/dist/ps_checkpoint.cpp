// Parameter-server checkpoints in two phases: every ps task writes its shard
// (atomically, through tpf::io::save_npz), then the chief commits
// "ckpt-<n>.json" naming them. A reader trusts manifests only, so shards of
// an unfinished save are never read.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/op_error.hpp"
#include "dist/ps_state.hpp"
#include "io/atomic_write.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/io/npz.hpp"

namespace tapeflow::dist::detail {
namespace {

std::string var_key(size_t i) {
  return "var" + std::to_string(i);
}
std::string slot_key(size_t i, const std::string& slot) {
  return "slot" + std::to_string(i) + "_" + slot;
}

Tensor scalar_int64(int64_t v) {
  return full({}, static_cast<double>(v), DType::int64);
}

}  // namespace

int64_t latest_committed(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return -1;
  static const std::regex manifest(R"(ckpt-(\d{1,18})\.json)");
  int64_t best = -1;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, manifest))
      best = std::max<int64_t>(best, std::stoll(m[1]));
  }
  return best;
}

std::string shard_path(const std::string& dir, int64_t n, int k, int of) {
  return dir + "/ckpt-" + std::to_string(n) + ".shard-" + std::to_string(k) +
         "-of-" + std::to_string(of) + ".npz";
}

void save_shard(const PsState& s, int64_t n) {
  const int k = s.server->task.task_index;
  std::filesystem::create_directories(s.options.checkpoint_dir);
  io::NamedTensors named;
  const std::vector<size_t> mine = s.owned_by(k);
  for (size_t j = 0; j < mine.size(); ++j) {
    named.emplace_back(var_key(mine[j]), s.shard[j]);
    for (const std::string& slot : s.optimizer->slot_names())
      named.emplace_back(slot_key(mine[j], slot),
                         s.optimizer->slot(s.shard[j], slot));
  }
  named.emplace_back("global_step", scalar_int64(s.global_step));
  named.emplace_back("iterations", scalar_int64(s.optimizer->iterations()));
  io::save_npz(shard_path(s.options.checkpoint_dir, n, k, s.num_ps), named);
}

void load_shard(PsState& s, int64_t n) {
  constexpr const char* kOp = "create";
  const int k = s.server->task.task_index;
  const std::string path = shard_path(s.options.checkpoint_dir, n, k, s.num_ps);
  if (!std::filesystem::exists(path))
    throw op_error<IOError>(kOp, "expected \"", path, "\" (checkpoint ", n,
                            " for ", s.num_ps, " ps tasks), it is missing");
  const auto arrays = io::load_npz_map(path);
  const auto get = [&](const std::string& key) -> const Tensor& {
    const auto it = arrays.find(key);
    if (it == arrays.end())
      throw op_error<IOError>(kOp, "expected \"", key, "\" in \"", path,
                              "\", it has no such array");
    return it->second;
  };
  const std::vector<size_t> mine = s.owned_by(k);
  for (size_t j = 0; j < mine.size(); ++j) {
    s.shard[j].assign(get(var_key(mine[j])));
    for (const std::string& slot : s.optimizer->slot_names())
      s.optimizer->slot(s.shard[j], slot).assign(get(slot_key(mine[j], slot)));
  }
  s.global_step = get("global_step").item<int64_t>();
  s.optimizer->set_iterations(get("iterations").item<int64_t>());
  s.resumed_step = s.global_step;
}

}  // namespace tapeflow::dist::detail
