// Configure-time probe: does this clang++ build and link a libFuzzer target?
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) {
  return 0;
}
