// FixedLengthRecordDataset on arbitrary bytes. The first three bytes choose
// record_bytes (1..64), header_bytes and footer_bytes (0..15); the rest is
// the file, read as plain, GZIP and ZLIB. tpf::Error is the expected answer
// to bad input; anything else is a bug.
#include "fuzz_file.hpp"
#include "tapeflow/data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int64_t record = 1 + data[0] % 64, header = data[1] % 16,
                footer = data[2] % 16;
  const fuzz::MemFile file(data + 3, size - 3);
  for (const char* compression : {"", "GZIP", "ZLIB"}) {
    try {
      int64_t records = 0;
      for (const std::string& r : tapeflow::data::FixedLengthRecordDataset(
               file.path(), record, header, footer, compression)) {
        if (static_cast<int64_t>(r.size()) != record) std::abort();
        ++records;
      }
      // A plain file yields exactly its whole records, or throws.
      if (*compression == '\0' &&
          header + records * record + footer != static_cast<int64_t>(size - 3))
        std::abort();
    } catch (const tapeflow::Error&) {
    }
  }
  return 0;
}
