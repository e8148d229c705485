// tpf::summary::FileWriter: tensorflow.Event protos in a TFRecord file.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/op_error.hpp"
#include "event.pb.h"
#include "io/atomic_write.hpp"
#include "summary/histogram.hpp"
#include "summary/image_pixels.hpp"
#include "summary/png.hpp"
#include "tapeflow/io/tfrecord.hpp"
#include "tapeflow/summary.hpp"

namespace tapeflow::summary {

namespace {

constexpr const char* kOp = "summary.FileWriter";

double wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

/** TF's name, plus pid and a counter: two writers never share a file. */
std::string event_file_name(const std::string& suffix) {
  // Part of one file name: a '/' put the file elsewhere, a NUL cut the name.
  if (suffix.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
    throw op_error<ValueError>(kOp,
                               "expected a filename_suffix without '/' or "
                               "NUL, got \"",
                               suffix, "\"");
  static std::atomic<int> counter{0};
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%010lld",
                static_cast<long long>(wall_time()));
  return "events.out.tfevents." + std::string(seconds) + "." + hostname() +
         "." + std::to_string(::getpid()) + "." + std::to_string(counter++) +
         suffix;
}

std::string create_logdir(const std::string& logdir) {
  if (logdir.empty())
    throw op_error<ValueError>(kOp, "expected a log directory, got \"\"");
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec || !std::filesystem::is_directory(logdir))
    throw op_error<IOError>(kOp, "cannot create the log directory ", logdir,
                            ": ", ec ? ec.message() : "not a directory");
  return logdir;
}

pb::Summary::Value& new_value(pb::Event& event, std::string_view tag) {
  auto* value = event.mutable_summary()->add_value();
  value->set_tag(std::string(tag));
  return *value;
}

std::vector<double> real_values(const Tensor& t, const char* op) {
  if (!t.defined())
    throw op_error<ValueError>(op, "expected a tensor, got an undefined one");
  if (t.dtype() == string_ || t.dtype() == bool_)
    throw op_error<DTypeError>(op, "expected a real tensor, got ",
                               dtype_name(t.dtype()));
  return t.to_vector<double>();
}

}  // namespace

struct FileWriter::State {
  FileWriterOptions options;
  std::string path;
  std::mutex mutex;
  std::condition_variable wake;
  io::TFRecordWriter records;
  int pending = 0;  // events written since the last flush
  bool closed = false;
  std::thread flusher;

  State(const std::string& logdir, FileWriterOptions opts)
      : options(std::move(opts)),
        path((std::filesystem::path(create_logdir(logdir)) /
              event_file_name(options.filename_suffix))
                 .string()),
        records(path) {}

  void write(pb::Event& event, const char* op) {
    event.set_wall_time(wall_time());
    // Protocol buffers serialize no message of 2 GiB or more: they give an
    // empty string, which would be written as an empty record.
    const size_t bytes = event.ByteSizeLong();
    if (bytes > size_t(INT_MAX))
      throw op_error<ValueError>(op, "expected an event under 2 GiB, got ",
                                 bytes, " bytes");
    const std::string record = event.SerializeAsString();
    std::lock_guard lock(mutex);
    if (closed)
      throw op_error<ValueError>(kOp,
                                 "expected an open writer, got a closed "
                                 "one (",
                                 path, ")");
    records.write(record);
    if (++pending >= options.max_queue) flush_locked();
  }

  void flush_locked() {
    if (closed) return;
    records.flush();
    pending = 0;
  }

  void run_flusher() {
    // A period past a century (flush_secs may be inf) is "never": one that
    // overflowed the clock would wake the loop at once, over and over. One
    // under a millisecond is a millisecond: 1e-12 s rounded to 0 ns spun.
    const auto period = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(
            std::clamp(options.flush_secs, 1e-3, 3.2e9)));
    std::unique_lock lock(mutex);
    while (!closed) {
      wake.wait_for(lock, period);
      // A failing disk surfaces at the next flush() or close() the user
      // calls; the timer must not kill the process.
      try {
        flush_locked();
      } catch (const Error&) {
      }
    }
  }

  void close() {
    {
      std::lock_guard lock(mutex);
      if (closed) return;
      closed = true;
      wake.notify_all();
    }
    if (flusher.joinable()) flusher.join();
    records.close();
    io::detail::fsync_path(path, false, kOp);
  }
};

FileWriter::FileWriter(const std::string& logdir, FileWriterOptions options) {
  if (!(options.flush_secs > 0) || options.max_queue < 1)
    throw op_error<ValueError>(kOp,
                               "expected flush_secs > 0 and max_queue >= 1, "
                               "got ",
                               options.flush_secs, " and ", options.max_queue);
  state_ = std::make_unique<State>(logdir, std::move(options));
  pb::Event version;
  version.set_file_version("brain.Event:2");
  state().write(version, kOp);
  // The version event alone tells TensorBoard the file exists.
  flush();
  state_->flusher = std::thread([s = state_.get()] { s->run_flusher(); });
}

FileWriter::~FileWriter() {
  if (!state_) return;
  try {
    close();
  } catch (const Error&) {
  }
}

FileWriter::FileWriter(FileWriter&&) noexcept = default;
FileWriter& FileWriter::operator=(FileWriter&& other) noexcept {
  if (this != &other) {
    try {
      if (state_) close();
    } catch (const Error&) {
    }
    state_ = std::move(other.state_);
  }
  return *this;
}

void FileWriter::scalar(std::string_view tag, double value, int64_t step) {
  pb::Event event;
  event.set_step(step);
  new_value(event, tag).set_simple_value(static_cast<float>(value));
  state().write(event, "summary.scalar");
}

void FileWriter::scalar(std::string_view tag, const Tensor& value,
                        int64_t step) {
  const auto values = real_values(value, "summary.scalar");
  if (values.size() != 1)
    throw op_error<ShapeError>("summary.scalar",
                               "expected a tensor with 1 element, got shape ",
                               value.shape().str());
  scalar(tag, values[0], step);
}

void FileWriter::histogram(std::string_view tag, const Tensor& values,
                           int64_t step) {
  const auto v = real_values(values, "summary.histogram");
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]))
      throw op_error<ValueError>("summary.histogram",
                                 "expected finite values "
                                 "in \"",
                                 tag, "\", got ", v[i], " at flat index ", i);
  }
  const auto h = detail::make_histogram(v);
  pb::Event event;
  event.set_step(step);
  auto* histo = new_value(event, tag).mutable_histo();
  histo->set_min(h.min);
  histo->set_max(h.max);
  histo->set_num(h.num);
  histo->set_sum(h.sum);
  histo->set_sum_squares(h.sum_squares);
  histo->mutable_bucket_limit()->Add(h.bucket_limit.begin(),
                                     h.bucket_limit.end());
  histo->mutable_bucket()->Add(h.bucket.begin(), h.bucket.end());
  state().write(event, "summary.histogram");
}

void FileWriter::image(std::string_view tag, const Tensor& images, int64_t step,
                       int max_outputs) {
  if (max_outputs < 1)
    throw op_error<ValueError>("summary.image",
                               "expected max_outputs >= 1, "
                               "got ",
                               max_outputs);
  const auto batch = detail::image_pixels(images, max_outputs);
  pb::Event event;
  event.set_step(step);
  for (size_t i = 0; i < batch.images.size(); ++i) {
    std::string name(tag);
    name += "/image";
    if (max_outputs > 1) {
      name += '/';
      name += std::to_string(i);
    }
    auto* image = new_value(event, name).mutable_image();
    image->set_height(static_cast<int32_t>(batch.height));
    image->set_width(static_cast<int32_t>(batch.width));
    image->set_colorspace(static_cast<int32_t>(batch.channels));
    image->set_encoded_image_string(detail::encode_png(
        batch.images[i].data(), static_cast<int>(batch.height),
        static_cast<int>(batch.width), static_cast<int>(batch.channels)));
  }
  state().write(event, "summary.image");
}

void FileWriter::text(std::string_view tag, std::string_view text,
                      int64_t step) {
  pb::Event event;
  event.set_step(step);
  auto& value = new_value(event, tag);
  // TensorBoard's text plugin: a string tensor marked with its plugin name
  // (the content, a TextPluginData at version 0, serializes to nothing).
  value.mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  auto* tensor = value.mutable_tensor();
  tensor->set_dtype(pb::DT_STRING);
  tensor->mutable_tensor_shape();
  tensor->add_string_val(std::string(text));
  state().write(event, "summary.text");
}

FileWriter::State& FileWriter::state() const {
  if (!state_)
    throw op_error<ValueError>(kOp, "expected a writer, got a moved-from one");
  return *state_;
}

void FileWriter::flush() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.flush_locked();
}

void FileWriter::close() {
  state().close();
}

const std::string& FileWriter::path() const {
  return state().path;
}

}  // namespace tapeflow::summary
