// io::load_npz on arbitrary bytes (zip structure, .npy headers, deflate).
// tpf::Error is the expected answer to bad input.
#include "fuzz_file.hpp"
#include "tapeflow/io/npz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::MemFile file(data, size);
  try {
    for (const auto& [name, t] : tapeflow::io::load_npz(file.path()))
      if (name.empty() || !t.defined()) std::abort();
  } catch (const tapeflow::Error&) {
  }
  return 0;
}
