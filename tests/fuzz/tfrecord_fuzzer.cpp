// TFRecordReader on arbitrary bytes, read as a plain, GZIP and ZLIB file.
// tpf::Error (DataLossError, IOError) is the expected answer to bad input;
// anything else (a crash, a sanitizer report, another exception) is a bug.
#include "fuzz_file.hpp"
#include "tapeflow/io/tfrecord.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace io = tapeflow::io;
  const fuzz::MemFile file(data, size);
  for (auto c : {io::Compression::kNone, io::Compression::kGzip,
                 io::Compression::kZlib}) {
    try {
      io::TFRecordReader reader(file.path(), c);
      std::string record;
      uint64_t last = 0;
      while (reader.read(record)) {
        // Every record consumes its 16 framing bytes plus its data.
        if (reader.offset() != last + 16 + record.size()) std::abort();
        last = reader.offset();
      }
    } catch (const tapeflow::Error&) {
    }
  }
  return 0;
}
