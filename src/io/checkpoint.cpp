// tpf::train::Checkpoint: one .npz per step, written atomically, and the
// save order in a state file beside them (TensorFlow's "checkpoint").
#include "tapeflow/io/checkpoint.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "io/atomic_write.hpp"
#include "tapeflow/io/npz.hpp"

namespace fs = std::filesystem;

namespace tapeflow::train {

namespace {

constexpr const char* kStepName = "__step__";
constexpr const char* kRngName = "__rng__";
constexpr const char* kSlotPrefix = "optimizer/";
// TensorFlow's CheckpointManager keeps its save order in "checkpoint".
constexpr const char* kStateName = "checkpoint";

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
 * The checkpoints `dir`'s state file lists, oldest saved first (file names
 * of `dir`); none without a readable state file. Lines other than
 * all_model_checkpoint_paths entries naming a "ckpt-<n>.npz" are skipped.
 */
std::vector<std::string> read_state(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kStateName);
  if (!in) return {};
  constexpr std::string_view kEntry = "all_model_checkpoint_paths: \"";
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kEntry, 0) != 0 || line.size() <= kEntry.size() ||
        line.back() != '"')
      continue;
    std::string name =
        line.substr(kEntry.size(), line.size() - kEntry.size() - 1);
    if (checkpoint_step(name) >= 0) names.push_back(std::move(name));
  }
  return names;
}

/** Replaces `dir`'s state file, atomically, with `names` in save order. */
void write_state(const std::string& dir,
                 const std::vector<std::string>& names) {
  constexpr const char* op = "Checkpoint::save";
  std::string text = "model_checkpoint_path: \"" + names.back() + "\"\n";
  for (const std::string& name : names)
    text += "all_model_checkpoint_paths: \"" + name + "\"\n";
  const std::string path = (fs::path(dir) / kStateName).string();
  io::detail::write_atomically(path, op, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out)
      throw op_error<IOError>(op, "expected to write ", tmp, ", got a failure");
  });
}

/**
 * The checkpoints of `dir`, oldest saved first: those the state file does
 * not list (a save killed before it updated the list, or files from before
 * there was one) by step, then the listed ones in their order.
 */
std::vector<std::string> save_order(const std::string& dir) {
  const std::vector<std::string> listed = read_state(dir);
  std::set<std::string> seen(listed.begin(), listed.end());
  std::vector<std::string> order;
  for (const auto& [step, path] : list_checkpoints(dir))
    if (!seen.count(path.filename().string()))
      order.push_back(path.filename().string());
  seen.clear();
  std::error_code ec;
  for (const std::string& name : listed)
    if (seen.insert(name).second &&
        fs::is_regular_file(fs::path(dir) / name, ec))
      order.push_back(name);
  return order;
}

/**
 * Removes "ckpt-<n>.npz.tmp-<pid>-<k>[.XXXXXX]" and "checkpoint.tmp-<pid>-<k>"
 * files left by processes that no longer exist (killed during a save).
 */
void remove_stale_temps(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string state_temp = std::string(kStateName) + ".tmp-";
    size_t at = name.find(".npz.tmp-");
    if (name.compare(0, 5, "ckpt-") == 0 && at != std::string::npos)
      at += 9;
    else if (name.rfind(state_temp, 0) == 0)
      at = state_temp.size();
    else
      continue;
    const std::string rest = name.substr(at);
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

namespace {

/** What one save writes, taken on the caller's thread. */
struct Snapshot {
  io::NamedTensors named;
  std::string name;  // "ckpt-<step>.npz"
  int max_to_keep;
};

/**
 * One mutex per directory (by absolute path) for the whole of a save: a save
 * lists the files it finds beside the state file as older, so another
 * thread's checkpoint written but not yet listed could be deleted, and two
 * state files written at once lose one's entry.
 */
std::mutex& directory_lock(const std::string& dir) {
  static std::mutex table_lock;
  static std::map<std::string, std::unique_ptr<std::mutex>> locks;
  std::error_code ec;
  fs::path key = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) key = dir;
  const std::lock_guard lock(table_lock);
  std::unique_ptr<std::mutex>& mu = locks[key.string()];
  if (!mu) mu = std::make_unique<std::mutex>();
  return *mu;
}

std::string write_snapshot(const std::string& dir, const Snapshot& snap) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw IOError("[Checkpoint::save] creating the directory " + dir +
                  " failed: " + ec.message());
  const std::lock_guard lock(directory_lock(dir));
  remove_stale_temps(dir);
  const std::string path = (fs::path(dir) / snap.name).string();
  io::save_npz(path, snap.named);  // durable once this returns

  // The save order (TF's): a step below an earlier one (training resumed
  // from an older checkpoint) is still the latest, and the oldest saved go
  // first. The list is written before any file goes, so a crash between
  // leaves extra files, never a list naming deleted ones.
  std::vector<std::string> order = save_order(dir);
  std::erase(order, snap.name);
  order.push_back(snap.name);
  size_t dropped = 0;
  if (snap.max_to_keep > 0 &&
      order.size() > static_cast<size_t>(snap.max_to_keep))
    dropped = order.size() - static_cast<size_t>(snap.max_to_keep);
  write_state(dir, {order.begin() + dropped, order.end()});
  for (size_t i = 0; i < dropped; ++i) fs::remove(fs::path(dir) / order[i], ec);
  return path;
}

Snapshot take_snapshot(const NamedVariables& variables,
                       const NamedVariables& slots, int64_t step,
                       int max_to_keep) {
  if (step < 0)
    throw ValueError("[Checkpoint::save] expected a step >= 0, got " +
                     std::to_string(step));
  Snapshot snap{.name = "ckpt-" + std::to_string(step) + ".npz",
                .max_to_keep = max_to_keep};
  io::NamedTensors& named = snap.named;
  named.reserve(variables.size() + slots.size() + 2);
  for (const auto& [name, v] : variables) named.emplace_back(name, snapshot(v));
  for (const auto& [name, v] : slots)
    named.emplace_back(kSlotPrefix + name, snapshot(v));
  named.emplace_back(kStepName, scalar(static_cast<double>(0), int64));
  *static_cast<int64_t*>(named.back().second.raw_data()) = step;
  const RngState rng = get_rng_state();
  const int64_t words[2] = {static_cast<int64_t>(rng.seed),
                            static_cast<int64_t>(rng.offset)};
  named.emplace_back(kRngName, from_buffer(words, {2}, int64));
  return snap;
}

}  // namespace

std::string Checkpoint::save(const std::string& dir) const {
  return write_snapshot(dir,
                        take_snapshot(variables_, slots_, step_, max_to_keep_));
}

std::future<std::string> Checkpoint::save_async(const std::string& dir) const {
  return std::async(std::launch::async, write_snapshot, dir,
                    take_snapshot(variables_, slots_, step_, max_to_keep_));
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
  const std::vector<std::string> order = save_order(dir);
  return order.empty() ? std::string()
                       : (fs::path(dir) / order.back()).string();
}

}  // namespace tapeflow::train
