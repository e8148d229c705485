// tfrecord_read: reading a TFRecord file of 1 KiB records with
// io::TFRecordReader (framing, both CRC32Cs, a copy into the record string)
// against raw_read, a plain read() loop over the same file into a 256 KiB
// buffer: the cost of the file system and page cache alone. The file (128 MiB)
// is written once per process and stays in the page cache. Both buffers are
// page-aligned: the kernel copies into one at 16 mod 64 about 1.5x slower
// (Zen 4), so malloc's 16-byte alignment would make either side a lottery.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <new>
#include <random>
#include <string>

#include "bench_cases.hpp"
#include "tapeflow/io/tfrecord.hpp"

namespace tfbench {
namespace {

constexpr size_t kRecordBytes = 1024;
constexpr int64_t kRecords = 128 * 1024;

struct RecordFile {
  std::filesystem::path dir;
  std::string path;
  int64_t bytes = 0;

  RecordFile() {
    dir = std::filesystem::temp_directory_path() /
          ("tapeflow_bench_records_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    path = (dir / "bench.tfrecord").string();
    std::mt19937 rng(42);
    std::string rec(kRecordBytes, '\0');
    tapeflow::io::TFRecordWriter w(path);
    for (int64_t i = 0; i < kRecords; ++i) {
      for (auto& ch : rec) ch = static_cast<char>(rng());
      w.write(rec);
    }
    w.close();
    bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  }
  ~RecordFile() { std::filesystem::remove_all(dir); }
};

const RecordFile& record_file() {
  static const RecordFile f;
  return f;
}

void set_record_counters(benchmark::State& state, const RecordFile& f) {
  state.SetBytesProcessed(state.iterations() * f.bytes);
  state.SetItemsProcessed(state.iterations() * kRecords);
}

}  // namespace

void tf_tfrecord_read(benchmark::State& state) {
  const RecordFile& f = record_file();
  std::string rec;
  for (auto _ : state) {
    tapeflow::io::TFRecordReader r(f.path);
    int64_t n = 0;
    while (r.read(rec)) ++n;
    if (n != kRecords) state.SkipWithError("wrong record count");
    benchmark::DoNotOptimize(rec.data());
  }
  set_record_counters(state, f);
}

void raw_tfrecord_read(benchmark::State& state) {
  const RecordFile& f = record_file();
  constexpr size_t kBuffer = size_t{1} << 18;
  constexpr std::align_val_t kPage{4096};
  std::unique_ptr<char, void (*)(char*)> buf(
      static_cast<char*>(::operator new(kBuffer, kPage)),
      [](char* p) { ::operator delete(p, kPage); });
  for (auto _ : state) {
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    int64_t total = 0;
    for (ssize_t got; (got = ::read(fd, buf.get(), kBuffer)) > 0;) total += got;
    ::close(fd);
    if (total != f.bytes) state.SkipWithError("short read");
    benchmark::DoNotOptimize(buf.get());
  }
  set_record_counters(state, f);
}

}  // namespace tfbench
