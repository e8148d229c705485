// tpf::train::Checkpoint: one .npz per step, written atomically.
#include "tapeflow/io/checkpoint.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "tapeflow/io/npz.hpp"

namespace fs = std::filesystem;

namespace tapeflow::train {

namespace {

constexpr const char* kStepName = "__step__";
constexpr const char* kRngName = "__rng__";
constexpr const char* kSlotPrefix = "optimizer/";

/** Step of a file named exactly "ckpt-<digits>.npz", else -1. */
int64_t checkpoint_step(const std::string& name) {
  constexpr size_t kPre = 5, kSuf = 4;  // "ckpt-", ".npz"
  if (name.size() <= kPre + kSuf || name.compare(0, kPre, "ckpt-") != 0 ||
      name.compare(name.size() - kSuf, kSuf, ".npz") != 0)
    return -1;
  const std::string digits = name.substr(kPre, name.size() - kPre - kSuf);
  if (!std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  // Every step save() can write (any int64 >= 0, 19 digits included) reads
  // back; a number beyond int64 is no checkpoint of ours.
  int64_t step = -1;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), step);
  return ec == std::errc() && end == digits.data() + digits.size() ? step : -1;
}

/** (step, path) of every checkpoint in `dir`, oldest first. */
std::vector<std::pair<int64_t, fs::path>> list_checkpoints(
    const std::string& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const int64_t step = checkpoint_step(e.path().filename().string());
    if (step >= 0 && e.is_regular_file(ec)) out.emplace_back(step, e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/**
 * Removes "ckpt-<n>.npz.tmp-<pid>-<k>[.XXXXXX]" files left by processes that no
 * longer exist (killed during a save).
 */
void remove_stale_temps(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.find(".npz.tmp-");
    if (name.compare(0, 5, "ckpt-") != 0 || at == std::string::npos) continue;
    const std::string rest = name.substr(at + 9);
    const long pid = std::strtol(rest.c_str(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      fs::remove(e.path(), ec);
  }
}

void check_entries(const NamedVariables& vars, const std::string& prefix,
                   std::set<std::string>& names) {
  for (const auto& [name, v] : vars) {
    if (name.empty() || name.compare(0, 2, "__") == 0)
      throw ValueError(
          "[Checkpoint] expected non-empty names not starting "
          "with \"__\", got \"" +
          name + "\"");
    if (!v.defined())
      throw ValueError("[Checkpoint] expected a variable for \"" + name +
                       "\", got an undefined one");
    if (!names.insert(prefix + name).second)
      throw ValueError("[Checkpoint] expected distinct names, got \"" + prefix +
                       name + "\" twice");
  }
}

}  // namespace

Checkpoint::Checkpoint(NamedVariables variables, NamedVariables slots,
                       int max_to_keep)
    : variables_(std::move(variables)),
      slots_(std::move(slots)),
      max_to_keep_(max_to_keep) {
  std::set<std::string> names;
  check_entries(variables_, "", names);
  check_entries(slots_, kSlotPrefix, names);
}

std::string Checkpoint::save(const std::string& dir) const {
  if (step_ < 0)
    throw ValueError("[Checkpoint::save] expected a step >= 0, got " +
                     std::to_string(step_));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw IOError("[Checkpoint::save] creating the directory " + dir +
                  " failed: " + ec.message());
  remove_stale_temps(dir);

  io::NamedTensors named;
  named.reserve(variables_.size() + slots_.size() + 2);
  for (const auto& [name, v] : variables_) named.emplace_back(name, v);
  for (const auto& [name, v] : slots_)
    named.emplace_back(kSlotPrefix + name, v);
  named.emplace_back(kStepName, scalar(static_cast<double>(0), int64));
  *static_cast<int64_t*>(named.back().second.raw_data()) = step_;
  const RngState rng = get_rng_state();
  const int64_t words[2] = {static_cast<int64_t>(rng.seed),
                            static_cast<int64_t>(rng.offset)};
  named.emplace_back(kRngName, from_buffer(words, {2}, int64));

  const std::string path =
      (fs::path(dir) / ("ckpt-" + std::to_string(step_) + ".npz")).string();
  io::save_npz(path, named);  // durable once this returns

  if (max_to_keep_ > 0) {
    auto all = list_checkpoints(dir);
    std::erase_if(all, [&](const auto& c) { return c.second == path; });
    const size_t keep_old = static_cast<size_t>(max_to_keep_ - 1);
    for (size_t i = 0; i + keep_old < all.size(); ++i)
      fs::remove(all[i].second, ec);
  }
  return path;
}

void Checkpoint::restore(const std::string& path, bool expect_partial) {
  std::map<std::string, Tensor> file = io::load_npz_map(path);
  std::vector<std::string> problems;
  std::set<std::string> used;

  auto lookup = [&](const std::string& name, const Shape& shape,
                    DType dtype) -> Tensor {
    used.insert(name);
    auto it = file.find(name);
    if (it == file.end()) {
      problems.push_back("\"" + name + "\" is missing");
      return {};
    }
    const Tensor& t = it->second;
    if (!(t.shape() == shape) || t.dtype() != dtype) {
      problems.push_back("\"" + name + "\" expected " + shape.str() + " " +
                         std::string(dtype_name(dtype)) + ", got " +
                         t.shape().str() + " " +
                         std::string(dtype_name(t.dtype())));
      return {};
    }
    return t;
  };

  std::vector<std::pair<Variable, Tensor>> assignments;
  for (const auto& [name, v] : variables_)
    assignments.emplace_back(v, lookup(name, v.shape(), v.dtype()));
  for (const auto& [name, v] : slots_)
    assignments.emplace_back(v,
                             lookup(kSlotPrefix + name, v.shape(), v.dtype()));
  const Tensor step = lookup(kStepName, {}, int64);
  const Tensor rng = lookup(kRngName, {2}, int64);
  if (!expect_partial)
    for (const auto& [name, t] : file)
      if (!used.count(name))
        problems.push_back("\"" + name + "\" is in the file but not expected");

  if (!problems.empty()) {
    std::string msg =
        "[Checkpoint::restore] expected the arrays of this "
        "checkpoint, got " +
        std::to_string(problems.size()) + " mismatch" +
        (problems.size() > 1 ? "es" : "") + " in " + path + ":";
    for (const auto& p : problems) msg += "\n  " + p;
    throw ValueError(msg);
  }
  for (auto& [var, value] : assignments) var.assign(value.to(var.device()));
  step_ = *static_cast<const int64_t*>(step.raw_data());
  const auto* w = static_cast<const int64_t*>(rng.raw_data());
  set_rng_state({static_cast<uint64_t>(w[0]), static_cast<uint64_t>(w[1])});
}

std::string latest_checkpoint(const std::string& dir) {
  const auto all = list_checkpoints(dir);
  return all.empty() ? std::string() : all.back().second.string();
}

}  // namespace tapeflow::train
