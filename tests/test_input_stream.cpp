// io::detail::InputStream (private): the buffered reader under every record
// reader, each case read on the caller's thread and through ReadAhead's.
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <ostream>
#include <random>
#include <string>

#include "io/input_stream.hpp"
#include "support/check.hpp"
#include "support/fixed_threads.hpp"
#include "support/temp_files.hpp"

namespace io = tpf::io;

using io::detail::ReadAheadMode;
using testing::deflate_bytes;
using testing::random_bytes;
using testing::spit;
using testing::TempDir;

namespace tapeflow::io::detail {
std::ostream& operator<<(std::ostream& os, ReadAheadMode mode) {
  return os << (mode == ReadAheadMode::kOn ? "read ahead" : "no read-ahead");
}
}  // namespace tapeflow::io::detail

namespace {
constexpr ReadAheadMode kModes[] = {ReadAheadMode::kOff, ReadAheadMode::kOn};
}  // namespace

TEST_CASE("InputStream: plain reads, skips, lines and offsets") {
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    TempDir dir;
    const std::string path = dir / "p.txt";
    spit(path, "line one\r\nline two\n\nlast");
    io::detail::InputStream in(path, io::Compression::kNone, "test_op", mode);
    std::string line;
    REQUIRE(in.read_line(line));
    CHECK(line == "line one");
    CHECK(in.offset() == 10);
    char buf[4];
    REQUIRE(in.read_exact(buf, 4, "word"));
    CHECK(std::string(buf, 4) == "line");
    CHECK(in.skip(1) == 1);
    REQUIRE(in.read_line(line));
    CHECK(line == "two");
    REQUIRE(in.read_line(line));
    CHECK(line.empty());
    REQUIRE(in.read_line(line));
    CHECK(line == "last");
    CHECK_FALSE(in.read_line(line));
    CHECK_FALSE(in.read_exact(buf, 4, "word"));
    CHECK(in.skip(10) == 0);
    CHECK(in.offset() == 24);
    CHECK_THROWS_AS(
        io::detail::InputStream(dir / "missing", io::Compression::kNone, "op"),
        tpf::IOError);
  }
}

TEST_CASE("InputStream: peek and consume read the buffer in place") {
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    TempDir dir;
    const std::string path = dir / "p.bin";
    spit(path, "abcdefgh");
    io::detail::InputStream in(path, io::Compression::kNone, "test_op", mode);
    CHECK(in.peek().empty());  // nothing is buffered before the first read
    char c;
    REQUIRE(in.read_exact(&c, 1, "byte"));
    const auto rest = in.peek();
    CHECK(std::string(rest.begin(), rest.end()) == "bcdefgh");
    // The kernel fills a page-aligned buffer (its copy is slower into others).
    CHECK(reinterpret_cast<uintptr_t>(rest.data() - 1) % 4096 == 0);
    in.consume(3);
    CHECK(in.offset() == 4);
    CHECK(in.peek().size() == 4);
    CHECK_THROWS_AS(in.consume(5), std::logic_error);
    in.consume(4);
    CHECK(in.peek().empty());
    CHECK_FALSE(in.read_exact(&c, 1, "byte"));
    CHECK(in.offset() == 8);
  }
}

TEST_CASE("InputStream: GZIP, ZLIB, concatenated GZIP members") {
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    TempDir dir;
    const std::string data = random_bytes(700000, 11);  // several buffers
    auto read_back = [&](const std::string& bytes, io::Compression c) {
      spit(dir / "z", bytes);
      io::detail::InputStream in(dir / "z", c, "test_op", mode);
      std::string out(data.size() * 2 + 10, '\0');
      const size_t got = in.read(out.data(), out.size());
      out.resize(got);
      CHECK(in.offset() == got);
      return out;
    };
    CHECK(read_back(deflate_bytes(data, 31), io::Compression::kGzip) == data);
    CHECK(read_back(deflate_bytes(data, 15), io::Compression::kZlib) == data);
    // What `cat a.gz b.gz` makes is one stream of both.
    CHECK(read_back(deflate_bytes(data, 31) + deflate_bytes("tail", 31),
                    io::Compression::kGzip) == data + "tail");
    CHECK(read_back(deflate_bytes("", 31), io::Compression::kGzip).empty());
  }
}

TEST_CASE("InputStream: damaged compressed data is a DataLossError") {
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    TempDir dir;
    const std::string data = random_bytes(100000, 5);
    auto check_loss = [&](const std::string& bytes, io::Compression c,
                          const std::string& part) {
      spit(dir / "z", bytes);
      io::detail::InputStream in(dir / "z", c, "test_op", mode);
      std::string out(data.size() + 100, '\0');
      try {
        in.read(out.data(), out.size());
        FAIL("expected DataLossError");
      } catch (const tpf::DataLossError& e) {
        const std::string msg = e.what();
        CHECK_MESSAGE(msg.rfind("[test_op] expected", 0) == 0, msg);
        CHECK_MESSAGE(msg.find(dir / "z") != std::string::npos, msg);
        CHECK_MESSAGE(msg.find(part) != std::string::npos, msg);
      }
    };
    const std::string gz = deflate_bytes(data, 31);
    check_loss(gz.substr(0, gz.size() - 5), io::Compression::kGzip,
               "truncated stream");
    check_loss(gz.substr(0, 1), io::Compression::kGzip, "truncated stream");
    check_loss(deflate_bytes(data, 15) + "junk", io::Compression::kZlib,
               "trailing bytes");
    check_loss(data, io::Compression::kZlib, "valid compressed data");
  }
}

TEST_CASE("InputStream: which files are read ahead") {
  TempDir dir;
  spit(dir / "big", random_bytes(size_t{1} << 20, 1));
  spit(dir / "small", random_bytes((size_t{1} << 20) - 1, 2));
  testing::FixedThreads threads(2);  // not the machine's load
  auto reads_ahead = [&](const std::string& path, ReadAheadMode mode) {
    return io::detail::InputStream(path, io::Compression::kNone, "op", mode)
        .reads_ahead();
  };
  CHECK(reads_ahead(dir / "big", ReadAheadMode::kAuto));
  CHECK_FALSE(reads_ahead(dir / "small", ReadAheadMode::kAuto));
  CHECK(reads_ahead(dir / "small", ReadAheadMode::kOn));
  CHECK_FALSE(reads_ahead(dir / "big", ReadAheadMode::kOff));
  // Not a regular file: a read may block (pipes) or never end.
  CHECK_FALSE(reads_ahead("/dev/zero", ReadAheadMode::kOn));
  // Kernels on one thread: the reader does not take a second one either.
  // No more threads reading ahead than cores beside the caller's: one here.
  {
    io::detail::InputStream first(dir / "big", io::Compression::kNone, "op");
    CHECK(first.reads_ahead());
    CHECK_FALSE(reads_ahead(dir / "big", ReadAheadMode::kAuto));
    CHECK(reads_ahead(dir / "big", ReadAheadMode::kOn));
  }
  CHECK(reads_ahead(dir / "big", ReadAheadMode::kAuto));
  threads.set(1);
  CHECK_FALSE(reads_ahead(dir / "big", ReadAheadMode::kAuto));
}

TEST_CASE("InputStream: reads, skips and peeks across many buffers") {
  // 256 KiB buffers (and read-ahead chunks); pieces of every size up to two
  // of them, so that reads, skips and peeks start and end anywhere.
  TempDir dir;
  const std::string data = random_bytes(3 * (size_t{1} << 20) + 123, 3);
  spit(dir / "f", data);
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    std::mt19937 rng(4);
    io::detail::InputStream in(dir / "f", io::Compression::kNone, "op", mode);
    std::string got, piece;
    while (in.offset() < data.size()) {
      const size_t n = rng() % (size_t{1} << 19);
      const size_t at = in.offset();
      switch (rng() % 3) {
        case 0:
          piece.resize(n);
          piece.resize(in.read(piece.data(), n));
          CHECK(piece == data.substr(at, n));
          break;
        case 1:
          CHECK(in.skip(n) == std::min(n, data.size() - at));
          break;
        default: {
          char c;
          if (in.peek().empty() && in.read(&c, 1) == 1) CHECK(c == data[at]);
          const auto view = in.peek();
          CHECK(std::string(view.begin(), view.end()) ==
                data.substr(in.offset(), view.size()));
          in.consume(view.size() / 2);
        }
      }
    }
    CHECK(in.offset() == data.size());
    char c;
    CHECK(in.read(&c, 1) == 0);
  }
}

TEST_CASE("InputStream: GZIP of many chunks, and closing before the end") {
  TempDir dir;
  // Incompressible: the compressed file spans several read-ahead chunks.
  const std::string data = random_bytes(3 * (size_t{1} << 20), 5);
  spit(dir / "z", deflate_bytes(data, 31));
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    io::detail::InputStream in(dir / "z", io::Compression::kGzip, "op", mode);
    std::string out(data.size() + 1, '\0');
    out.resize(in.read(out.data(), out.size()));
    CHECK(out == data);
  }
  // The read-ahead thread waits on a full ring; the stream closes anyway.
  for (int i = 0; i < 20; ++i) {
    io::detail::InputStream in(dir / "z", io::Compression::kGzip, "op",
                               ReadAheadMode::kOn);
    char c;
    CHECK(in.read_exact(&c, 1, "byte"));
  }
}

TEST_CASE("InputStream: a forked child neither reads ahead nor waits") {
  // The read-ahead thread stays with the parent: the child's read is an
  // IOError and closing the stream there returns (it must not join).
  TempDir dir;
  spit(dir / "f", random_bytes(size_t{1} << 20, 6));
  auto in = std::make_unique<io::detail::InputStream>(
      dir / "f", io::Compression::kNone, "op", ReadAheadMode::kOn);
  std::string buf(size_t{1} << 20, '\0');
  REQUIRE(in->read(buf.data(), 10) == 10);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(20);  // a hang ends the child with SIGALRM, which fails below
    int code = 1;
    try {
      in->read(buf.data(), buf.size());
    } catch (const tpf::IOError& e) {
      code =
          std::string(e.what()).find("got a forked child") != std::string::npos
              ? 0
              : 2;
    }
    in.reset();
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The parent reads on.
  CHECK(in->read(buf.data(), buf.size()) == buf.size() - 10);
}

TEST_CASE("InputStream: a file that grows after its end is read on") {
  TempDir dir;
  const std::string first = random_bytes(300000, 7), more = "appended";
  for (const ReadAheadMode mode : kModes) {
    CAPTURE(mode);
    spit(dir / "g", first);
    io::detail::InputStream in(dir / "g", io::Compression::kNone, "op", mode);
    std::string buf(first.size() + 100, '\0');
    CHECK(in.read(buf.data(), buf.size()) == first.size());
    CHECK(in.read(buf.data(), 1) == 0);
    std::ofstream(dir / "g", std::ios::binary | std::ios::app) << more;
    CHECK(in.read(buf.data(), buf.size()) == more.size());
    CHECK(buf.substr(0, more.size()) == more);
    CHECK(in.offset() == first.size() + more.size());
  }
}
