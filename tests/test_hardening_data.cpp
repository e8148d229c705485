// Hostile but realistic arguments to the input pipeline, the readers and
// writers and the checkpoint files: tf.data's and TensorFlow's answer or a
// tapeflow::Error naming the stage or function called (never a bare
// std::bad_alloc or std::system_error, a read past a buffer, a segfault on
// a moved-from object, a join that waits for ever, or a save that fails
// because another thread saves too).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/check.hpp"
#include "support/temp_files.hpp"
#include "tapeflow/data/coordinator.hpp"

namespace data = tpf::data;
namespace io = tpf::io;
using testing::expect_error;

TEST_CASE("interleave's threads are bounded by what can run, not the bound") {
  // num_parallel_calls 2^40 (= cycle_length) bounds the calls in flight:
  // the workers started are at most 256, and the data comes out whole.
  constexpr int64_t huge = int64_t{1} << 40;
  auto it = data::range(3)
                .interleave(
                    [](const tpf::Tensor& x) {
                      return data::range(2).map(
                          [x](const tpf::Tensor& y) { return x * 10 + y; });
                    },
                    huge, 1, huge)
                .make_iterator();
  std::vector<int64_t> got;
  while (auto x = it.get_next()) got.push_back(x->item<int64_t>());
  CHECK(got == std::vector<int64_t>{0, 10, 20, 1, 11, 21});
}

TEST_CASE("prefetch takes kAutotune, as tf.data.AUTOTUNE") {
  auto it = data::range(5).prefetch(data::kAutotune).make_iterator();
  int64_t n = 0;
  while (auto x = it.get_next()) CHECK(x->item<int64_t>() == n++);
  CHECK(n == 5);
  expect_error<tpf::ValueError>(
      [] { (void)data::range(5).prefetch(0); },
      "[prefetch] expected buffer_size >= 1 or kAutotune, got 0");
}

TEST_CASE("interleave takes a kAutotune cycle_length, as tf.data.AUTOTUNE") {
  // Every element comes once whatever the cycle the pool's size gives.
  for (int64_t calls : {int64_t{1}, data::kAutotune}) {
    auto it = data::range(4)
                  .interleave(
                      [](const tpf::Tensor& x) {
                        return data::range(3).map(
                            [x](const tpf::Tensor& y) { return x * 10 + y; });
                      },
                      data::kAutotune, 1, calls)
                  .make_iterator();
    std::vector<int64_t> got;
    while (auto x = it.get_next()) got.push_back(x->item<int64_t>());
    std::sort(got.begin(), got.end());
    CHECK(got ==
          std::vector<int64_t>{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
  }
  expect_error<tpf::ValueError>(
      [] {
        (void)data::range(2).interleave(
            [](const tpf::Tensor&) { return data::range(1); }, -2);
      },
      "[interleave] expected cycle_length >= 1 (or kAutotune) and "
      "block_length >= 1, got -2 and 1");
}

TEST_CASE("padded_batch refuses padded extents below -1") {
  expect_error<tpf::ValueError>(
      [] { (void)data::range(4).padded_batch(2, {{-7}}); },
      "[padded_batch] expected padded extents >= 0, or -1 for the longest, "
      "got -7");
}

TEST_CASE("a moved-from dataset, reader or writer is an error") {
  testing::TempDir dir;
  const std::string path = dir / "records.tfrecord";
  auto a = data::range(3);
  auto b = std::move(a);
  expect_error<tpf::ValueError>(
      [&] { (void)a.make_iterator(); },
      "[Dataset] expected a dataset, got a moved-from");
  CHECK(b.make_iterator().get_next().has_value());

  io::TFRecordWriter writer(path);
  io::TFRecordWriter moved_writer(std::move(writer));
  writer.close();  // does nothing, as a second close()
  expect_error<tpf::IOError>([&] { writer.write("x"); },
                             "[TFRecordWriter] expected an open file, got a "
                             "moved-from TFRecordWriter");
  expect_error<tpf::IOError>([&] { writer.flush(); }, "[TFRecordWriter]");
  moved_writer.write("abc");
  moved_writer.close();

  io::TFRecordReader reader(path);
  io::TFRecordReader moved_reader(std::move(reader));
  std::string record;
  expect_error<tpf::IOError>([&] { (void)reader.read(record); },
                             "[TFRecordReader] expected an open file, got a "
                             "moved-from TFRecordReader");
  REQUIRE(moved_reader.read(record));
  CHECK(record == "abc");
}

TEST_CASE("Coordinator::join refuses threads of another coordinator") {
  tpf::train::Coordinator mine, theirs;
  std::vector<tpf::train::CoordinatedThread> threads;
  threads.push_back(theirs.make_thread([] {}));
  expect_error<tpf::ValueError>(
      [&] { mine.join(threads, std::chrono::seconds(1)); },
      "[Coordinator::join] expected threads made by this coordinator, got "
      "thread 0 of another");
  theirs.join(threads);
}

TEST_CASE("parse_example: fixed shapes whose counts would wrap are refused") {
  const auto one =
      io::serialize_example({{"b", std::vector<std::string>{"x"}}});
  expect_error<tpf::ValueError>(
      [&] {
        (void)io::parse_single_example(
            one,
            {{"b", io::FixedLenFeature{io::bytes, {int64_t{1} << 62, 4}}}});
      },
      "[parse_single_example] expected a shape whose element count fits in "
      "int64");
  // 2^32 x 2^32 wraps to 0 values: no longer a "matching" empty feature.
  expect_error<tpf::ValueError>(
      [] {
        (void)io::parse_example(
            std::vector<std::string>{io::serialize_example({})},
            {{"b", io::FixedLenFeature{io::bytes,
                                       {int64_t{1} << 32, int64_t{1} << 32},
                                       std::vector<std::string>{"d"}}}});
      },
      "[parse_example] expected a shape whose element count fits in int64");
  // A count that fits but not in memory is named too.
  expect_error<tpf::ResourceExhaustedError>(
      [&] {
        (void)io::parse_single_example(
            one, {{"b", io::FixedLenFeature{io::bytes,
                                            {int64_t{1} << 50},
                                            std::vector<std::string>{"d"}}}});
      },
      "[parse_single_example]");
}

TEST_CASE("MnistBytes filled by hand: pixels short of its images are refused") {
  io::MnistBytes m;
  m.height = 28;
  m.width = 28;
  m.labels = tpf::zeros({5}, tpf::int64);
  m.pixels.resize(28 * 28 * 4);
  expect_error<tpf::ValueError>(
      [&] { (void)m.images(0, 1); },
      "[mnist_images] expected 5 x 28 x 28 = 3920 pixel bytes, got 3136");
  expect_error<tpf::ValueError>(
      [&] { (void)m.images(tpf::tensor<int64_t>({0})); }, "[mnist_images]");
  m.pixels.resize(28 * 28 * 5, 255);
  CHECK(tpf::max(m.images(4, 1)).item<double>() == 1.0);
}

TEST_CASE("threads saving one path at once each land whole") {
  testing::TempDir dir;
  const std::string path = dir / "shared.npz";
  std::atomic<int> failures{0};
  const auto save = [&](float v) {
    for (int i = 0; i < 50; ++i) try {
        io::save_npz(path, {{"x", tpf::full({256}, v)}});
      } catch (const tpf::Error&) {
        ++failures;
      }
  };
  std::thread one(save, 1.0f), two(save, 2.0f);
  one.join();
  two.join();
  CHECK(failures == 0);
  const auto back = io::load_npz(path);
  REQUIRE(back.size() == 1);
  const double v = tpf::max(back[0].second).item<double>();
  CHECK((v == 1.0 || v == 2.0));
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE(
    "an empty compressed file holds no lines, as Python's gzip reads it") {
  testing::TempDir dir;
  const std::string path = dir / "empty.gz";
  std::ofstream(path).close();
  for (const char* compression : {"GZIP", "ZLIB"}) {
    CAPTURE(compression);
    auto it = data::TextLineDataset(path, compression).make_iterator();
    CHECK_FALSE(it.get_next().has_value());
  }
}

TEST_CASE("an empty array with a huge extent saves and loads back") {
  testing::TempDir dir;
  const std::string path = dir / "empty.npz";
  io::save_npz(path, {{"e", tpf::zeros({0, int64_t{1} << 50})}});
  const auto back = io::load_npz(path);
  REQUIRE(back.size() == 1);
  CHECK(back[0].second.shape() == tpf::Shape{0, int64_t{1} << 50});
}

TEST_CASE("a record writer whose write failed refuses the ones after it") {
  testing::TempDir dir;
  const std::string path = dir / "records";
  io::TFRecordWriter w(path);
  w.write(std::string(1000, 'a'));
  w.flush();
  // The file may grow 100 kB more (a full disk); SIGXFSZ ignored, write()
  // fails with EFBIG part-way through the 256 kB buffer.
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  rlimit tight = old;
  tight.rlim_cur = std::filesystem::file_size(path) + 100000;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &tight) == 0);
  CHECK_THROWS_AS(w.write(std::string(400000, 'b')), tpf::IOError);
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  std::signal(SIGXFSZ, old_handler);
  // Space is back, but the file ends in a partial record: a record written
  // now would sit after it, unreadable. It rewrote the first 100 kB and
  // reported success.
  expect_error<tpf::IOError>(
      [&] { w.write("c"); },
      "[TFRecordWriter] expected a file whose writes succeeded, got ");
  CHECK_THROWS_AS(w.flush(), tpf::IOError);
  CHECK_THROWS_AS(w.close(), tpf::IOError);
  io::TFRecordReader r(path);
  std::string record;
  REQUIRE(r.read(record));
  CHECK(record == std::string(1000, 'a'));
  expect_error<tpf::DataLossError>([&] { (void)r.read(record); },
                                   "[TFRecordReader] expected 400000 bytes");
}
