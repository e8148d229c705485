#pragma once
#include <array>
#include <cstddef>
#include <vector>

namespace tapeflow {

/**
 * Vector with N elements stored inline: op inputs, saved tensors and tape
 * slots are almost always 1-3 long, and the per-op path must not allocate.
 */
template <class T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  explicit SmallVector(size_t n) { resize(n); }
  template <class It>
  SmallVector(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  void push_back(T value) {
    if (size_ < N) {
      inline_[size_] = std::move(value);
    } else {
      if (size_ == N) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(std::move(value));
    }
    ++size_;
  }
  void resize(size_t n) {
    while (size_ < n) push_back(T{});
    while (size_ > n) pop_back();
  }
  void pop_back() {
    --size_;
    if (size_ >= N) {
      heap_.pop_back();
      if (size_ == N) {
        for (size_t i = 0; i < N; ++i) inline_[i] = std::move(heap_[i]);
        heap_.clear();
      }
    } else {
      inline_[size_] = T{};
    }
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return size_ <= N ? inline_.data() : heap_.data(); }
  const T* data() const { return size_ <= N ? inline_.data() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  size_t size_ = 0;
};

}  // namespace tapeflow
