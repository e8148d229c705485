#pragma once
// CRC32C (Castagnoli, polynomial 0x1EDC6F41 reflected 0x82F63B78): the
// checksum of TFRecord files and of many storage formats.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tapeflow::io {

/**
 * The CRC32C of `crc`'s data followed by n more bytes at `data`, so that
 * crc32c_extend(crc32c(a), b) == crc32c(a + b). Uses the SSE4.2 crc32 and
 * PCLMUL instructions when the CPU has them, else slice-by-8 tables.
 */
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

/** CRC32C of `data`; crc32c("123456789") == 0xE3069283. */
inline uint32_t crc32c(std::string_view data) {
  return crc32c_extend(0, data.data(), data.size());
}

/**
 * TFRecord's masked CRC: rotated right by 15 bits plus a constant, because
 * the CRC of a string that itself embeds CRCs is weak.
 */
constexpr uint32_t mask_crc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
constexpr uint32_t unmask_crc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace tapeflow::io
