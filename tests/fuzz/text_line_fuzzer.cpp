// TextLineDataset on arbitrary bytes, read as a plain, GZIP and ZLIB file.
// tpf::Error is the expected answer to bad input; anything else (a crash, a
// sanitizer report, another exception) is a bug.
#include "fuzz_file.hpp"
#include "tapeflow/data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::MemFile file(data, size);
  for (const char* compression : {"", "GZIP", "ZLIB"}) {
    try {
      size_t text_bytes = 0;
      for (const std::string& line :
           tapeflow::data::TextLineDataset(file.path(), compression))
        text_bytes += line.size() + 1;
      // Plain lines are the file's bytes less their terminators.
      if (*compression == '\0' && text_bytes > size + 1) std::abort();
    } catch (const tapeflow::Error&) {
    }
  }
  return 0;
}
