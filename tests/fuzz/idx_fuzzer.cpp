// io::read_idx on arbitrary bytes (plain or gzip, sniffed by the reader).
// tpf::Error is the expected answer to bad input.
#include "fuzz_file.hpp"
#include "tapeflow/io/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::MemFile file(data, size);
  try {
    const tapeflow::Tensor t = tapeflow::io::read_idx(file.path());
    if (!t.defined()) std::abort();
  } catch (const tapeflow::Error&) {
  }
  return 0;
}
