#pragma once
#include <cstddef>
#include <memory>
#include <new>

namespace tapeflow::io::detail {

/**
 * A page-aligned byte buffer. The kernel's copy into a buffer at 8, 16 or 24
 * bytes past a 64-byte line runs at 2/3 to 1/4 of its speed into an aligned
 * one (rep movsb, measured on Zen 4), and operator new only promises 16.
 */
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size)
      : data_(static_cast<unsigned char*>(::operator new(size, kAlign))),
        size_(size) {}
  unsigned char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  static constexpr std::align_val_t kAlign{4096};
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete(p, kAlign); }
  };
  std::unique_ptr<unsigned char, Free> data_;
  size_t size_ = 0;
};

}  // namespace tapeflow::io::detail
