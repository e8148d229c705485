#pragma once
// The two CRC32C implementations behind crc32c_extend, visible to the tests
// so that each is checked whatever the CPU picks.
#include <cstddef>
#include <cstdint>

namespace tapeflow::io::detail {

/** Slice-by-8 tables: any CPU. */
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t n);
/** True when the CPU has SSE4.2 and PCLMUL (crc32c_sse42 may be called). */
bool crc32c_has_sse42();
#if defined(__x86_64__)
/** Three interleaved crc32 streams combined with PCLMUL. */
uint32_t crc32c_sse42(uint32_t crc, const void* data, size_t n);
#endif

}  // namespace tapeflow::io::detail
