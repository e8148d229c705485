#pragma once
// NumPy .npz archives (a zip of .npy v1.0 files), readable by np.load and
// reading what np.savez / np.savez_compressed write.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::io {

/** Named tensors in archive order. */
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/**
 * Writes `named` to `path` as an .npz: one "<name>.npy" member per tensor
 * (dtypes <f4 <f8 <i4 <i8 |b1; C order; device tensors are copied to the
 * host, strided ones written contiguous). Members are stored uncompressed
 * unless `compressed` (deflate, like np.savez_compressed).
 *
 * Atomic: the archive is written to "<path>.tmp-<pid>-<k>", fsynced, renamed
 * over `path` and the directory fsynced, so `path` always holds either the old
 * or the new archive. Throws ValueError for empty/duplicate names or undefined
 * tensors, IOError when the file system fails.
 */
void save_npz(const std::string& path, const NamedTensors& named,
              bool compressed = false);
/** save_npz of a map (arrays in key order). */
template <class Compare>
void save_npz(const std::string& path,
              const std::map<std::string, Tensor, Compare>& named,
              bool compressed = false) {
  save_npz(path, NamedTensors(named.begin(), named.end()), compressed);
}

/**
 * Reads every array of an .npz into CPU tensors, in archive order; names drop
 * the ".npy" suffix (as np.load's keys do). Everything is validated (zip
 * structure and CRCs, .npy magic and header, dtype, fortran_order, shape
 * against the byte count); any problem is an IOError naming the file and the
 * array. Never reads out of bounds.
 */
NamedTensors load_npz(const std::string& path);
/** load_npz as a name → tensor map. */
std::map<std::string, Tensor> load_npz_map(const std::string& path);

}  // namespace tapeflow::io
