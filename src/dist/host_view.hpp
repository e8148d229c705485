#pragma once
// The memory a collective hands to MPI: contiguous and on the host. A
// contiguous CPU tensor lends its own buffer; anything else (a strided view,
// a CUDA tensor: Debian's Open MPI is not CUDA-aware) is copied to a host
// buffer and written back when the collective ends.
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::dist::detail {

struct HostView {
  Tensor tensor;  // what the caller passed
  Tensor host;    // contiguous, on the CPU
  bool staged = false;
  void* data() const { return host.raw_data(); }
};

/**
 * Whether each element of `t` has memory of its own: a broadcast view's
 * share it, and a value written into one would keep only the last element.
 */
bool writable(const Tensor& t);
/** ValueError naming `op` unless writable(t). */
void check_writable(const Tensor& t, const char* op);
/**
 * `writes`: the collective overwrites the tensor (counted as an in-place
 * write; check_writable first).
 */
HostView host_view(const Tensor& t, const char* op, bool writes);
/** Copies a staged buffer back into the caller's tensor. */
void write_back(const HostView& v, const char* op);
/** A fresh contiguous host copy of `t`, never sharing its buffer. */
Tensor host_clone(const Tensor& t);
/** The check every collective makes first: a defined, numeric tensor. */
void check_defined(const Tensor& t, const char* op);
/** ValueError unless 0 <= rank < size (and, with `not_self`, rank != self). */
void check_peer(int rank, int size, int self, bool not_self, const char* op,
                const char* what);

}  // namespace tapeflow::dist::detail
