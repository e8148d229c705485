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

}  // namespace tapeflow::dist::detail
