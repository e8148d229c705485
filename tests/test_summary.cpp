// tpf::summary::FileWriter: the event file read back record by record and
// parsed as tensorflow.Event; histogram buckets against hand-computed ones,
// images decoded by libpng, flushing, crash safety, threads and errors.
// (tensorboard_check.py reads the same kind of file with TensorBoard itself.)
#include <png.h>
#include <signal.h>
#include <sys/wait.h>

#include <cfloat>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>

#include "event.pb.h"
#include "summary/histogram.hpp"
#include "support/check.hpp"
#include "support/temp_files.hpp"
#include "tapeflow/io/tfrecord.hpp"
#include "tapeflow/summary.hpp"

namespace pb = tapeflow::summary::pb;
namespace summary = tpf::summary;
using testing::expect_error;
using testing::TempDir;

namespace {

/** Every complete record of the event file, parsed. */
std::vector<pb::Event> read_events(const std::string& path) {
  tpf::io::TFRecordReader reader(path);
  std::vector<pb::Event> events;
  std::string record;
  while (reader.read(record)) {
    pb::Event e;
    REQUIRE(e.ParseFromString(record));
    events.push_back(e);
  }
  return events;
}

/** The one summary value of the last event, once flushed. */
pb::Summary::Value last_value(summary::FileWriter& writer) {
  writer.flush();
  const auto events = read_events(writer.path());
  REQUIRE(events.size() >= 2);
  REQUIRE(events.back().summary().value_size() == 1);
  return events.back().summary().value(0);
}

std::vector<uint8_t> decode_png(const std::string& png, int channels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  REQUIRE(png_image_begin_read_from_memory(&image, png.data(), png.size()));
  image.format = channels == 1   ? PNG_FORMAT_GRAY
                 : channels == 3 ? PNG_FORMAT_RGB
                                 : PNG_FORMAT_RGBA;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
  REQUIRE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr));
  return pixels;
}

summary::FileWriterOptions options(double flush_secs, int max_queue) {
  summary::FileWriterOptions o;
  o.flush_secs = flush_secs;
  o.max_queue = max_queue;
  return o;
}

}  // namespace

TEST_CASE("summary: the file starts with the version event, named as TF's") {
  TempDir dir;
  summary::FileWriter writer(dir / "run");
  const std::string name = std::filesystem::path(writer.path()).filename();
  CHECK(name.rfind("events.out.tfevents.", 0) == 0);
  CHECK(std::filesystem::path(writer.path()).parent_path() == dir / "run");
  const auto events = read_events(writer.path());  // flushed at creation
  REQUIRE(events.size() == 1);
  CHECK(events[0].file_version() == "brain.Event:2");
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  CHECK(std::abs(events[0].wall_time() - now) < 60);
  summary::FileWriter second(dir / "run");
  CHECK(second.path() != writer.path());
}

TEST_CASE("summary: scalars from doubles and one-element tensors") {
  TempDir dir;
  summary::FileWriter writer(dir.str());
  writer.scalar("loss", 0.25, 7);
  writer.scalar("accuracy",
                tpf::from_vector(std::vector<double>{0.875}, {1, 1}), 8);
  writer.close();
  const auto events = read_events(writer.path());
  REQUIRE(events.size() == 3);
  CHECK(events[1].step() == 7);
  CHECK(events[1].summary().value(0).tag() == "loss");
  CHECK(events[1].summary().value(0).simple_value() == 0.25f);
  CHECK(events[2].step() == 8);
  CHECK(events[2].summary().value(0).simple_value() == 0.875f);
  summary::FileWriter again(dir.str());
  expect_error<tpf::ShapeError>([&] { again.scalar("x", tpf::zeros({2}), 0); },
                                "[summary.scalar]");
  expect_error<tpf::DTypeError>(
      [&] { again.scalar("x", tpf::from_strings({"a"}, {1}), 0); },
      "[summary.scalar] expected a real tensor, got string");
}

TEST_CASE("summary: TensorFlow's default bucket limits") {
  const auto limits = summary::detail::default_bucket_limits();
  // 1e-12 * 1.1^k < 1e20 for k = 0..773: 774 limits a side, DBL_MAX, and 0.
  REQUIRE(limits.size() == 2 * 775 + 1);
  CHECK(limits[775] == 0.0);
  CHECK(limits[776] == 1e-12);
  CHECK(limits[774] == -1e-12);
  CHECK(limits.back() == DBL_MAX);
  CHECK(limits.front() == -DBL_MAX);
  CHECK(limits[777] == doctest::Approx(1.1e-12).epsilon(1e-15));
  CHECK(limits[limits.size() - 2] < 1e20);
  CHECK(limits[limits.size() - 2] * 1.1 >= 1e20);
  CHECK(std::is_sorted(limits.begin(), limits.end()));
}

TEST_CASE("summary: a histogram merges runs of empty buckets as TF does") {
  TempDir dir;
  summary::FileWriter writer(dir.str());
  const auto limits = summary::detail::default_bucket_limits();
  // 0.5 lies in the bucket [limits[b - 1], limits[b]).
  const size_t b =
      std::upper_bound(limits.begin(), limits.end(), 0.5) - limits.begin();
  REQUIRE(limits[b - 1] <= 0.5);
  REQUIRE(0.5 < limits[b]);

  SUBCASE("one value: an empty run, its bucket, an empty run") {
    writer.histogram("w", tpf::from_vector(std::vector<double>{0.5}, {1}), 3);
    const auto h = last_value(writer).histo();
    CHECK(h.num() == 1);
    CHECK(h.min() == 0.5);
    CHECK(h.max() == 0.5);
    CHECK(h.sum() == 0.5);
    CHECK(h.sum_squares() == 0.25);
    REQUIRE(h.bucket_limit_size() == 3);
    CHECK(h.bucket_limit(0) == limits[b - 1]);
    CHECK(h.bucket(0) == 0);
    CHECK(h.bucket_limit(1) == limits[b]);
    CHECK(h.bucket(1) == 1);
    CHECK(h.bucket_limit(2) == DBL_MAX);
    CHECK(h.bucket(2) == 0);
  }
  SUBCASE("strided float32 values of both signs, zero included") {
    const auto m =
        tpf::from_vector(std::vector<float>{-1.0f, 9.f, 0.0f, 9.f, 0.5f, 9.f,
                                            0.5f, 9.f, 2.0f, 9.f},
                         {5, 2});
    writer.histogram("w", tpf::slice(m, {0, 0}, {5, 1}), 4);
    const auto h = last_value(writer).histo();
    CHECK(h.num() == 5);
    CHECK(h.min() == -1);
    CHECK(h.max() == 2);
    CHECK(h.sum() == 2);
    CHECK(h.sum_squares() == 5.5);
    double total = 0;
    for (int i = 0; i < h.bucket_size(); ++i) {
      total += h.bucket(i);
      // Never two empty buckets in a row, and limits strictly increase.
      if (i > 0) {
        CHECK_FALSE((h.bucket(i) == 0 && h.bucket(i - 1) == 0));
        CHECK(h.bucket_limit(i) > h.bucket_limit(i - 1));
      }
    }
    CHECK(total == 5);
    // Zero counts in the bucket ending at 1e-12; 0.5 twice in its bucket.
    const auto count_at = [&](double limit) {
      for (int i = 0; i < h.bucket_size(); ++i)
        if (h.bucket_limit(i) == limit) return h.bucket(i);
      return -1.0;
    };
    CHECK(count_at(1e-12) == 1);
    CHECK(count_at(limits[b]) == 2);
  }
  SUBCASE("no values: one empty bucket up to DBL_MAX") {
    writer.histogram("w", tpf::zeros({0}), 0);
    const auto h = last_value(writer).histo();
    CHECK(h.num() == 0);
    REQUIRE(h.bucket_size() == 1);
    CHECK(h.bucket_limit(0) == DBL_MAX);
  }
  SUBCASE("non-finite values are an error, as in TensorFlow") {
    expect_error<tpf::ValueError>(
        [&] {
          writer.histogram(
              "w", tpf::from_vector(std::vector<double>{1.0, NAN}, {2}), 0);
        },
        "[summary.histogram] expected finite values in \"w\", got nan at "
        "flat index 1");
    expect_error<tpf::ValueError>(
        [&] {
          writer.histogram(
              "w", tpf::from_vector(std::vector<double>{INFINITY}, {1}), 0);
        },
        "[summary.histogram] expected finite values");
  }
}

TEST_CASE("summary: images as PNG, integer and float pixels") {
  TempDir dir;
  summary::FileWriter writer(dir.str());
  SUBCASE("an NHWC batch of grayscale bytes, max_outputs of them") {
    std::vector<double> px(3 * 2 * 2);
    for (size_t i = 0; i < px.size(); ++i) px[i] = double(i * 20);
    writer.image("x", tpf::from_vector(px, {3, 2, 2, 1}).cast(tpf::int32), 5,
                 2);
    writer.flush();
    const auto events = read_events(writer.path());
    const auto& values = events.back().summary().value();
    REQUIRE(values.size() == 2);
    for (int i = 0; i < 2; ++i) {
      CHECK(values[i].tag() ==
            std::string("x/image/").append(std::to_string(i)));
      const auto& image = values[i].image();
      CHECK(image.height() == 2);
      CHECK(image.width() == 2);
      CHECK(image.colorspace() == 1);
      const auto pixels = decode_png(image.encoded_image_string(), 1);
      CHECK(pixels ==
            std::vector<uint8_t>{uint8_t(80 * i), uint8_t(80 * i + 20),
                                 uint8_t(80 * i + 40), uint8_t(80 * i + 60)});
    }
  }
  SUBCASE("one float RGB image, clipped and scaled as convert_image_dtype") {
    writer.image(
        "rgb",
        tpf::from_vector(std::vector<double>{0.0, 0.5, 1.0, -0.3, 2.0, 0.25},
                         {1, 2, 3}),
        6, 1);
    const auto value = last_value(writer);
    CHECK(value.tag() == "rgb/image");
    CHECK(value.image().colorspace() == 3);
    CHECK(decode_png(value.image().encoded_image_string(), 3) ==
          std::vector<uint8_t>{0, 127, 255, 0, 255, 63});
  }
  SUBCASE("RGBA from a strided (transposed NCHW) view") {
    const auto nchw = tpf::from_vector(
        std::vector<double>{0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0},
        {1, 4, 1, 2});
    writer.image("t", tpf::transpose(nchw, {0, 2, 3, 1}), 0, 1);
    const auto value = last_value(writer);
    CHECK(value.image().colorspace() == 4);
    CHECK(decode_png(value.image().encoded_image_string(), 4) ==
          std::vector<uint8_t>{0, 0, 0, 255, 255, 255, 255, 255});
  }
  SUBCASE("errors") {
    expect_error<tpf::ShapeError>(
        [&] {
          writer.image("x", tpf::zeros({4, 4}), 0);
        },
        "[summary.image] expected NHWC (rank 4) or HWC (rank 3) images, got "
        "shape (4, 4)");
    expect_error<tpf::ShapeError>(
        [&] {
          writer.image("x", tpf::zeros({1, 4, 4, 2}), 0);
        },
        "[summary.image] expected 1, 3 or 4 channels");
    expect_error<tpf::ValueError>(
        [&] {
          writer.image("x",
                       tpf::from_vector(std::vector<double>{300.0}, {1, 1, 1})
                           .cast(tpf::int64),
                       0);
        },
        "[summary.image] expected integer pixels in [0, 255], got 300");
    expect_error<tpf::ValueError>(
        [&] {
          writer.image(
              "x", tpf::from_vector(std::vector<double>{NAN}, {1, 1, 1}), 0);
        },
        "[summary.image] expected pixels in [0, 1], got nan");
    expect_error<tpf::DTypeError>(
        [&] {
          writer.image("x", tpf::zeros({1, 1, 1}, tpf::bool_), 0);
        },
        "[summary.image] expected integer or floating pixels, got bool");
    expect_error<tpf::ValueError>(
        [&] {
          writer.image("x", tpf::zeros({1, 1, 1}), 0, 0);
        },
        "[summary.image] expected max_outputs >= 1, got 0");
  }
}

TEST_CASE("summary: text as a string tensor of the text plugin") {
  TempDir dir;
  summary::FileWriter writer(dir.str());
  writer.text("note", "**hello**, TensorBoard", 9);
  const auto value = last_value(writer);
  CHECK(value.tag() == "note");
  CHECK(value.metadata().plugin_data().plugin_name() == "text");
  CHECK(value.tensor().dtype() == pb::DT_STRING);
  CHECK(value.tensor().tensor_shape().dim_size() == 0);
  REQUIRE(value.tensor().string_val_size() == 1);
  CHECK(value.tensor().string_val(0) == "**hello**, TensorBoard");
}

TEST_CASE("summary: events reach the file on max_queue and on the timer") {
  TempDir dir;
  SUBCASE("max_queue") {
    summary::FileWriter writer(dir.str(), options(3600, 3));
    writer.scalar("a", 1, 1);
    writer.scalar("a", 2, 2);
    CHECK(read_events(writer.path()).size() == 1);
    writer.scalar("a", 3, 3);
    CHECK(read_events(writer.path()).size() == 4);
  }
  SUBCASE("the timer flushes without any call") {
    summary::FileWriter writer(dir.str(), options(0.05, 1000));
    writer.scalar("a", 1, 1);
    size_t seen = 0;
    for (int i = 0; i < 200 && seen < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      seen = read_events(writer.path()).size();
    }
    CHECK(seen == 2);
  }
}

TEST_CASE("summary: a flush period too long for the clock means never") {
  TempDir dir;
  // inf and 1e300 seconds overflowed the timer's deadline: the flusher spun
  // on the writer's lock, and closing it hung.
  for (double never : {std::numeric_limits<double>::infinity(), 1e300, 1e10}) {
    CAPTURE(never);
    summary::FileWriter writer(dir.str(), options(never, 2));
    writer.scalar("a", 1, 1);
    writer.scalar("a", 2, 2);
    CHECK(read_events(writer.path()).size() == 3);  // max_queue still flushes
    writer.close();
  }
}

TEST_CASE("summary: a killed writer leaves every flushed event readable") {
  TempDir dir;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    summary::FileWriter writer(dir.str(), options(3600, 1000));
    for (int step = 0; step < 3; ++step) writer.scalar("loss", step, step);
    writer.flush();
    for (int step = 3; step < 6; ++step) writer.scalar("loss", step, step);
    raise(SIGKILL);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  const auto entries = std::vector<std::filesystem::directory_entry>(
      std::filesystem::directory_iterator(dir.path), {});
  REQUIRE(entries.size() == 1);
  const auto events = read_events(entries[0].path().string());
  REQUIRE(events.size() == 4);
  for (int step = 0; step < 3; ++step)
    CHECK(events[step + 1].summary().value(0).simple_value() == float(step));
}

TEST_CASE("summary: threads write through one writer") {
  TempDir dir;
  summary::FileWriter writer(dir.str(), options(0.01, 10));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&writer, tag = std::to_string(t)] {
      for (int i = 0; i < 100; ++i) writer.scalar(tag, i, i);
    });
  }
  for (auto& th : threads) th.join();
  writer.close();
  const auto events = read_events(writer.path());
  CHECK(events.size() == 401);
}

TEST_CASE("summary: errors") {
  TempDir dir;
  testing::spit(dir / "file", "x");
  expect_error<tpf::IOError>(
      [&] { summary::FileWriter w(dir / "file/sub"); },
      "[summary.FileWriter] cannot create the log directory");
  expect_error<tpf::ValueError>(
      [&] { summary::FileWriter w(dir.str(), options(0, 10)); },
      "[summary.FileWriter] expected flush_secs > 0 and max_queue >= 1, got 0 "
      "and 10");
  // One file name's tail: a NUL cut the name short, a '/' moved the file.
  for (std::string suffix : {std::string("a\0b", 3), std::string("/../x")}) {
    summary::FileWriterOptions o;
    o.filename_suffix = suffix;
    expect_error<tpf::ValueError>(
        [&] { summary::FileWriter w(dir.str(), o); },
        "[summary.FileWriter] expected a filename_suffix without '/' or NUL");
  }
  summary::FileWriter writer(dir.str());
  // Sides past PNG's limit are refused before a pixel is copied (2^20 x 2^20
  // pixels threw std::bad_alloc).
  const auto huge =
      tpf::broadcast_to(tpf::ones({1, 1, 1, 1}), {1, 1 << 20, 1 << 20, 1});
  expect_error<tpf::ValueError>(
      [&] { writer.image("huge", huge, 0); },
      "[summary.image] expected images of at most 1000000 pixels a side "
      "(PNG's limit), got shape (1, 1048576, 1048576, 1)");
  writer.close();
  writer.close();
  writer.flush();
  expect_error<tpf::ValueError>(
      [&] { writer.scalar("x", 1, 0); },
      "[summary.FileWriter] expected an open writer, got a closed one");
  summary::FileWriter moved = std::move(writer);
  expect_error<tpf::ValueError>(
      [&] { writer.scalar("x", 1, 0); },  // NOLINT(bugprone-use-after-move)
      "[summary.FileWriter] expected a writer, got a moved-from one");
}
