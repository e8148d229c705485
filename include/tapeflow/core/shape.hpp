#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace tapeflow {

/** Highest rank a tensor may have (NCDHW convolutions need 5). */
inline constexpr int kMaxRank = 8;

/**
 * A list of at most kMaxRank int64 extents stored inline, so that creating a
 * tensor never allocates for its shape. Used for shapes and strides alike.
 */
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);
  template <class It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }

  int64_t size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  int64_t operator[](int64_t i) const { return dims_[i]; }
  int64_t& operator[](int64_t i) { return dims_[i]; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  int64_t* begin() { return dims_.data(); }
  int64_t* end() { return dims_.data() + rank_; }
  int64_t back() const { return dims_[rank_ - 1]; }
  void push_back(int64_t d) {
    if (rank_ == kMaxRank) throw_rank(rank_ + 1);
    dims_[rank_++] = d;
  }
  void resize(int64_t n, int64_t value = 0) {
    if (n > kMaxRank) throw_rank(n);
    for (int64_t i = rank_; i < n; ++i) dims_[i] = value;
    rank_ = static_cast<int8_t>(n);
  }
  /**
   * Product of the extents (1 for rank 0). Unsigned, so that an empty shape
   * such as (2, 2^63 - 1, 0) multiplies without overflow (the product is 0
   * modulo 2^64 too); a shape without a 0 was checked when it was made.
   */
  int64_t numel() const {
    uint64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= static_cast<uint64_t>(dims_[i]);
    return static_cast<int64_t>(n);
  }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i)
      if (a.dims_[i] != b.dims_[i]) return false;
    return true;
  }

 private:
  [[noreturn]] static void throw_rank(int64_t rank);
  std::array<int64_t, kMaxRank> dims_{};
  int8_t rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/**
 * Replaces the extents in `dims` by the row-major strides (in elements) of a
 * contiguous tensor of that shape. In place, so that a new tensor's strides
 * are written where they live: a stride Shape built elsewhere and copied in
 * is read back with wide loads right after its narrow stores, which stalls
 * store forwarding (~15 cycles on every op that allocates).
 */
inline void extents_to_contiguous_strides(Shape& dims) {
  // Unsigned: only an empty tensor's extents can overflow the product (its
  // strides then address nothing), and that must not be undefined.
  uint64_t acc = 1;
  for (int64_t i = dims.size() - 1; i >= 0; --i) {
    const int64_t extent = dims[i];
    dims[i] = static_cast<int64_t>(acc);
    acc *= static_cast<uint64_t>(extent > 0 ? extent : 1);
  }
}

/** Row-major strides (in elements) of a contiguous tensor of shape `s`. */
inline Shape contiguous_strides(const Shape& s) {
  // A copy for the rank: resize's zero fill compiled to a `rep stos`, whose
  // start-up cost shows in every small op.
  Shape st = s;
  extents_to_contiguous_strides(st);
  return st;
}

}  // namespace tapeflow
