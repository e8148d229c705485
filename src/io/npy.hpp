#pragma once
// The .npy header: writing version 1.0, parsing versions 1 to 3.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tapeflow/core/dtype.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow::io::detail {

/** "<f4", "<f8", "<i4", "<i8" or "|b1". */
const char* npy_descr(DType dtype);

/** Magic, version 1.0, length and the dict, padded to a multiple of 64. */
std::string npy_header(DType dtype, const Shape& shape);

struct NpyHeader {
  DType dtype;
  Shape shape;
  uint64_t data_bytes;  // numel × itemsize
};

/** Bytes before the header text: 10 for version 1, 12 for versions 2 and 3;
 * `prefix` must hold 8 bytes (magic and version). Throws IOError. */
size_t npy_prefix_size(const unsigned char* prefix, const std::string& where);
/** Length of the header text, from the first npy_prefix_size() bytes. */
uint64_t npy_header_length(const unsigned char* prefix);

/**
 * Parses the header dict {'descr': ..., 'fortran_order': ..., 'shape': ...}.
 * Every problem is an IOError "[load_npz] expected ..., got ... (<where>)".
 */
NpyHeader parse_npy_header(const std::string& text, const std::string& where);

}  // namespace tapeflow::io::detail
