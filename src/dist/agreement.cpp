#include "dist/agreement.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "core/op_error.hpp"
#include "dist/watchdog.hpp"

namespace tapeflow::dist::detail {
namespace {

/** What one rank is about to do: op, elements, dtype, argument, shape. */
struct Intent {
  enum : size_t { op, numel, dtype, arg, rank, dims, size = dims + kMaxRank };
  std::array<int64_t, size> words{};

  static Shape shape_of(const int64_t* w) {
    return Shape(w + dims, w + dims + w[rank]);
  }
};

}  // namespace

void check_agreement(CommState& c, const char* op, const Shape& shape,
                     DType dtype, int64_t arg, const char* arg_name) {
  if (!debug_checks() || c.size == 1) return;
  Intent mine;
  mine.words[Intent::op] =
      static_cast<int64_t>(std::hash<std::string_view>{}(op) >> 1);
  mine.words[Intent::numel] = static_cast<int64_t>(shape.numel());
  mine.words[Intent::dtype] = static_cast<int64_t>(dtype);
  mine.words[Intent::arg] = arg;
  mine.words[Intent::rank] = shape.size();
  std::copy(shape.begin(), shape.end(), mine.words.begin() + Intent::dims);
  constexpr int kWords = static_cast<int>(Intent::size);
  std::vector<int64_t> all(Intent::size * static_cast<size_t>(c.size));
  InFlight flight(op, c.seq);
  check_mpi(MPI_Allgather(mine.words.data(), kWords, MPI_INT64_T, all.data(),
                          kWords, MPI_INT64_T, c.comm),
            op);
  // Every rank holds the same table, so every rank throws the same error.
  const int64_t* first = all.data();
  for (int r = 1; r < c.size; ++r) {
    const int64_t* theirs = first + Intent::size * static_cast<size_t>(r);
    if (theirs[Intent::op] != first[Intent::op])
      throw op_error<DistError>(op,
                                "expected every rank in the same "
                                "collective (seq ",
                                c.seq, "), rank ", r, " is in another one");
    if (theirs[Intent::numel] != first[Intent::numel])
      throw op_error<DistError>(op, "expected ", first[Intent::numel],
                                " elements on every rank, rank ", r, " has ",
                                theirs[Intent::numel]);
    const auto dtype_of = [](const int64_t* w) {
      return dtype_name(static_cast<DType>(w[Intent::dtype]));
    };
    if (theirs[Intent::dtype] != first[Intent::dtype])
      throw op_error<DistError>(op, "expected dtype ", dtype_of(first),
                                " on every rank, rank ", r, " has ",
                                dtype_of(theirs));
    if (theirs[Intent::arg] != first[Intent::arg])
      throw op_error<DistError>(op, "expected ", arg_name, " ",
                                first[Intent::arg], " on every rank, rank ", r,
                                " has ", theirs[Intent::arg]);
    const Shape expected = Intent::shape_of(first);
    const Shape actual = Intent::shape_of(theirs);
    if (actual != expected)
      throw op_error<DistError>(op, "expected shape ", expected.str(),
                                " on every rank, rank ", r, " has ",
                                actual.str());
  }
}

uint64_t layout_hash(std::span<const Tensor> tensors) {
  // FNV-1a over the words: dtype, rank, extents, per tensor.
  uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](int64_t word) {
    h = (h ^ static_cast<uint64_t>(word)) * 0x100000001b3ull;
  };
  for (const Tensor& t : tensors) {
    mix(static_cast<int64_t>(t.dtype()));
    mix(t.rank());
    for (int64_t d : t.shape()) mix(d);
  }
  return h;
}

void check_same_everywhere(MPI_Comm comm, const char* op, const char* what,
                           int64_t count, uint64_t hash) {
  int size = 1;
  if (comm == MPI_COMM_NULL) return;
  check_mpi(MPI_Comm_size(comm, &size), op);
  if (size == 1) return;
  const int64_t mine[2] = {count, static_cast<int64_t>(hash)};
  std::vector<int64_t> all(2 * static_cast<size_t>(size));
  InFlight flight(op, 0);
  check_mpi(
      MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm),
      op);
  for (int r = 1; r < size; ++r) {
    const int64_t* theirs = all.data() + 2 * static_cast<size_t>(r);
    if (theirs[0] != all[0])
      throw op_error<DistError>(op, "expected the same ", what,
                                " on every rank: rank 0 has ", all[0],
                                ", rank ", r, " has ", theirs[0]);
    if (theirs[1] != all[1])
      throw op_error<DistError>(op, "expected the same ", what,
                                " on every rank: rank ", r, " has ", theirs[0],
                                " that differ from rank 0's");
  }
}

}  // namespace tapeflow::dist::detail
