#pragma once
// Compression of the files that the record readers and writers handle.
#include <string>

namespace tapeflow::io {

enum class Compression { kNone, kGzip, kZlib };

/**
 * TensorFlow's compression_type strings: "" (or "NONE"), "GZIP", "ZLIB".
 * Anything else is a ValueError naming `op`.
 */
Compression parse_compression(const std::string& type, const char* op);

}  // namespace tapeflow::io
