// Where a parameter server's variables live: cut into pieces, placed on the
// ps tasks, and the layout every task must agree on.
#include "dist/ps_placement.hpp"

#include <algorithm>
#include <functional>

#include "core/op_error.hpp"
#include "dist/agreement.hpp"

namespace tapeflow::dist::detail {

std::vector<Piece> cut(const NamedVariables& vars, int num_ps,
                       const Placement& p) {
  std::vector<Piece> pieces;
  const int64_t min_bytes = p.options.min_shard_bytes;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i].second;
    const int64_t bytes = v.numel() * int64_t(itemsize(v.dtype()));
    int64_t parts = 1;
    if (min_bytes > 0 && v.rank() >= 1 && bytes >= 2 * min_bytes)
      parts = std::min<int64_t>({num_ps, v.dim(0), bytes / min_bytes});
    for (int64_t j = 0; j < parts; ++j) {
      const int64_t begin = v.rank() ? v.dim(0) * j / parts : 0;
      const int64_t end = v.rank() ? v.dim(0) * (j + 1) / parts : 0;
      pieces.push_back({i, begin, end - begin, parts == 1});
    }
  }
  return pieces;
}

std::vector<int> place(const NamedVariables& vars,
                       const std::vector<Piece>& pieces, int num_ps,
                       const Placement& p) {
  std::vector<int> owner(pieces.size(), -1);
  std::vector<int64_t> load(num_ps, 0);
  const auto bytes = [&](size_t q) {
    const Variable& v = vars[pieces[q].var].second;
    const int64_t row =
        v.rank() ? v.numel() / std::max<int64_t>(v.dim(0), 1) : 1;
    const int64_t n = pieces[q].whole ? v.numel() : pieces[q].rows * row;
    return n * int64_t(itemsize(v.dtype()));
  };
  for (size_t q = 0; q < pieces.size(); ++q) {
    const auto& [name, v] = vars[pieces[q].var];
    const int k = pinned_task(v);
    if (k >= num_ps)
      throw op_error<ValueError>("create", "expected PsScope tasks in [0, ",
                                 num_ps, ") (the ps tasks), variable \"", name,
                                 "\" has ", k);
    if (k < 0) continue;
    owner[q] = k;
    load[k] += bytes(q);
  }
  std::vector<size_t> rest;
  for (size_t q = 0; q < pieces.size(); ++q)
    if (owner[q] < 0) rest.push_back(q);
  if (p.kind == Placement::Kind::round_robin) {
    for (size_t j = 0; j < rest.size(); ++j) owner[rest[j]] = int(j % num_ps);
    return owner;
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [&](size_t a, size_t b) { return bytes(a) > bytes(b); });
  for (size_t q : rest) {
    const int k =
        int(std::min_element(load.begin(), load.end()) - load.begin());
    owner[q] = k;
    load[k] += bytes(q);
  }
  return owner;
}

uint64_t layout_of(const NamedVariables& vars, const std::vector<Piece>& pieces,
                   const std::vector<int>& owner) {
  std::vector<Tensor> tensors;
  for (const auto& [name, v] : vars) tensors.push_back(v);
  uint64_t h = layout_hash(tensors);
  const auto mix = [&h](uint64_t word) { h = (h ^ word) * 0x100000001b3ull; };
  for (const auto& [name, v] : vars) mix(std::hash<std::string>{}(name));
  for (size_t p = 0; p < pieces.size(); ++p) {
    mix(pieces[p].var);
    mix(static_cast<uint64_t>(pieces[p].begin));
    mix(static_cast<uint64_t>(pieces[p].rows));
    mix(static_cast<uint64_t>(owner[p]));
  }
  return h;
}

}  // namespace tapeflow::dist::detail
