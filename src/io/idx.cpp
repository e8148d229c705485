// IDX files (MNIST): http://yann.lecun.com/exdb/mnist/ — big-endian header
// {0, 0, type, rank}, `rank` big-endian uint32 extents, then the data.
#include "tapeflow/io/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::io {

namespace {

struct GzClose {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

struct IdxRaw {
  uint8_t type = 0;
  Shape shape;
  std::vector<unsigned char> data;  // big-endian elements
};

size_t idx_itemsize(uint8_t type) {
  switch (type) {
    case 0x08:
    case 0x09:
      return 1;  // unsigned, signed byte
    case 0x0B:
      return 2;  // short
    case 0x0C:
    case 0x0D:
      return 4;  // int, float
    case 0x0E:
      return 8;  // double
    default:
      return 0;
  }
}

/** Reads up to n bytes (gzread reads plain files as they are). */
size_t gz_read(gzFile f, unsigned char* buf, size_t n,
               const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int r = gzread(f, buf + done, chunk);
    if (r < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw IOError(std::string("[read_idx] expected readable data, got \"") +
                    (msg ? msg : "read error") + "\" in " + path);
    }
    done += static_cast<size_t>(r);
    if (static_cast<unsigned>(r) < chunk) {
      // zlib reports a gzip stream cut short (its trailer or more missing)
      // as Z_BUF_ERROR beside a short read, not as a failed read.
      int code = Z_OK;
      gzerror(f, &code);
      if (code == Z_BUF_ERROR)
        throw IOError(
            "[read_idx] expected a complete gzip stream, got one cut short "
            "(truncated) after " +
            std::to_string(gztell(f)) + " uncompressed bytes in " + path);
      break;
    }
  }
  return done;
}

IdxRaw read_raw(const std::string& path) {
  std::unique_ptr<gzFile_s, GzClose> f(gzopen(path.c_str(), "rb"));
  if (!f)
    throw IOError("[read_idx] expected a readable file, got " + path + ": " +
                  std::strerror(errno));
  unsigned char magic[4];
  if (gz_read(f.get(), magic, 4, path) != 4)
    throw IOError(
        "[read_idx] expected a 4-byte IDX magic number, got a "
        "shorter file: " +
        path);
  IdxRaw raw;
  raw.type = magic[2];
  const size_t item = idx_itemsize(raw.type);
  if (magic[0] != 0 || magic[1] != 0 || item == 0 || magic[3] < 1 ||
      magic[3] > kMaxRank) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", magic[0], magic[1],
                  magic[2], magic[3]);
    throw IOError(
        "[read_idx] expected an IDX magic number 0000TTRR (type TT in "
        "08 09 0b 0c 0d 0e, rank RR in 1..8), got " +
        std::string(hex) + " in " + path);
  }
  uint64_t total = item;
  for (int i = 0; i < magic[3]; ++i) {
    unsigned char d[4];
    if (gz_read(f.get(), d, 4, path) != 4)
      throw IOError("[read_idx] expected " + std::to_string(magic[3]) +
                    " dimensions, got a truncated header in " + path);
    const uint64_t extent = (uint64_t{d[0]} << 24) | (uint64_t{d[1]} << 16) |
                            (uint64_t{d[2]} << 8) | d[3];
    raw.shape.push_back(static_cast<int64_t>(extent));
    if (__builtin_mul_overflow(total, extent, &total) ||
        total > (uint64_t{1} << 40))
      throw IOError(
          "[read_idx] expected less than 2^40 bytes of data, got "
          "shape " +
          raw.shape.str() + " in " + path);
  }
  // Grow while reading: a corrupt header cannot make us allocate more than
  // the file holds.
  size_t have = 0;
  while (have < total) {
    const size_t want =
        std::min<uint64_t>(total, std::max<size_t>(have * 2, 1 << 20));
    raw.data.resize(want);
    const size_t got =
        gz_read(f.get(), raw.data.data() + have, want - have, path);
    have += got;
    if (have < want) break;  // end of file
  }
  if (have != total)
    throw IOError("[read_idx] expected " + std::to_string(total) +
                  " bytes of data for shape " + raw.shape.str() + ", got " +
                  std::to_string(have) + " (truncated) in " + path);
  unsigned char extra;
  if (gz_read(f.get(), &extra, 1, path) != 0)
    throw IOError("[read_idx] expected the file to end after " +
                  std::to_string(total) + " bytes of data, got more in " +
                  path);
  return raw;
}

template <class T, class U>
void decode(const unsigned char* src, T* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    U v = 0;
    unsigned char b[sizeof(U)];
    for (size_t k = 0; k < sizeof(U); ++k)
      b[k] = src[i * sizeof(U) + sizeof(U) - 1 - k];
    std::memcpy(&v, b, sizeof(U));
    dst[i] = static_cast<T>(v);
  }
}

std::string find_file(const std::string& dir, const std::string& split,
                      const std::string& kind) {
  namespace fs = std::filesystem;
  for (const std::string& stem :
       {split + "-" + kind + "-idx", split + "-" + kind + ".idx"})
    for (const char* rank : {"1", "3"})
      for (const char* ext : {"", ".gz"}) {
        const fs::path p = fs::path(dir) / (stem + rank + "-ubyte" + ext);
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return p.string();
      }
  throw IOError("[load_mnist] expected " + split + "-" + kind +
                "-idx?-ubyte[.gz] in " + dir +
                ", got no such file (Debian: apt-get install "
                "dataset-fashion-mnist)");
}

}  // namespace

Tensor read_idx(const std::string& path) {
  IdxRaw raw = read_raw(path);
  const int64_t n = raw.shape.numel();
  const unsigned char* p = raw.data.data();
  switch (raw.type) {
    case 0x08: {
      Tensor t = empty(raw.shape, int32);
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = p[i];
      return t;
    }
    case 0x09: {
      Tensor t = empty(raw.shape, int32);
      decode<int32_t, int8_t>(p, t.data<int32_t>(), n);
      return t;
    }
    case 0x0B: {
      Tensor t = empty(raw.shape, int32);
      decode<int32_t, int16_t>(p, t.data<int32_t>(), n);
      return t;
    }
    case 0x0C: {
      Tensor t = empty(raw.shape, int32);
      decode<int32_t, int32_t>(p, t.data<int32_t>(), n);
      return t;
    }
    case 0x0D: {
      Tensor t = empty(raw.shape, float32);
      decode<float, float>(p, t.data<float>(), n);
      return t;
    }
    default: {
      Tensor t = empty(raw.shape, float64);
      decode<double, double>(p, t.data<double>(), n);
      return t;
    }
  }
}

MnistBytes load_mnist_bytes(const std::string& dir,
                            const std::string& split_in) {
  const std::string split = split_in == "test" ? "t10k" : split_in;
  if (split != "train" && split != "t10k")
    throw ValueError(
        "[load_mnist] expected split \"train\" or \"t10k\", got \"" + split_in +
        "\"");
  const std::string images_path = find_file(dir, split, "images");
  const std::string labels_path = find_file(dir, split, "labels");
  IdxRaw images = read_raw(images_path);
  const IdxRaw labels = read_raw(labels_path);
  if (images.type != 0x08 || images.shape.size() != 3)
    throw IOError(
        "[load_mnist] expected unsigned-byte images of rank 3, got "
        "type " +
        std::to_string(images.type) + " shape " + images.shape.str() + " in " +
        images_path);
  if (labels.type != 0x08 || labels.shape.size() != 1)
    throw IOError(
        "[load_mnist] expected unsigned-byte labels of rank 1, got "
        "type " +
        std::to_string(labels.type) + " shape " + labels.shape.str() + " in " +
        labels_path);
  const int64_t n = images.shape[0];
  if (labels.shape[0] != n)
    throw IOError("[load_mnist] expected " + std::to_string(n) +
                  " labels (one per image of " + images_path + "), got " +
                  std::to_string(labels.shape[0]) + " in " + labels_path);
  MnistBytes out;
  out.pixels = std::move(images.data);
  out.pixels.shrink_to_fit();  // read_raw grows by doubling
  out.height = images.shape[1];
  out.width = images.shape[2];
  out.labels = empty({n}, int64);
  int64_t* lab = out.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) lab[i] = labels.data[i];
  return out;
}

namespace {
/**
 * Refuses a MnistBytes whose public fields disagree (a user may fill them):
 * fewer pixel bytes than labels x height x width would be read past.
 */
void check_fields(const MnistBytes& m) {
  constexpr const char* op = "mnist_images";
  if (m.labels.defined() && m.labels.rank() != 1)
    throw op_error<ShapeError>(op, "expected 1-d labels, got shape ",
                               m.labels.shape().str());
  if (m.height < 0 || m.width < 0)
    throw op_error<ValueError>(op, "expected height and width >= 0, got ",
                               m.height, " and ", m.width);
  const int64_t plane = checked_mul(m.height, m.width, op, "an image's pixels");
  const int64_t need = checked_mul(m.size(), plane, op, "the pixel bytes");
  if (m.pixels.size() < uint64_t(need))
    throw op_error<ValueError>(op, "expected ", m.size(), " x ", m.height,
                               " x ", m.width, " = ", need,
                               " pixel bytes, got ", m.pixels.size());
}

/** Row `index` of `pixels` scaled to [0, 1] into `dst`. */
void scale_image(const MnistBytes& m, int64_t index, float* dst) {
  const int64_t plane = m.height * m.width;
  const uint8_t* src = m.pixels.data() + index * plane;
  for (int64_t k = 0; k < plane; ++k) dst[k] = float(src[k]) / 255.0f;
}
}  // namespace

Tensor MnistBytes::images(int64_t begin, int64_t count) const {
  check_fields(*this);
  if (begin < 0 || count < 0 || begin > size() || count > size() - begin)
    throw IndexError("[mnist_images] expected a range inside [0, " +
                     std::to_string(size()) + "), got " +
                     std::to_string(begin) + " + " + std::to_string(count));
  Tensor out = empty({count, 1, height, width}, float32);
  float* dst = out.data<float>();
  for (int64_t i = 0; i < count; ++i)
    scale_image(*this, begin + i, dst + i * height * width);
  return out;
}

Tensor MnistBytes::images(const Tensor& indices) const {
  check_fields(*this);
  if (indices.dtype() != int64 || indices.rank() != 1)
    throw DTypeError("[mnist_images] expected 1-d int64 indices, got " +
                     std::string(dtype_name(indices.dtype())) + " " +
                     indices.shape().str());
  const int64_t count = indices.shape()[0];
  const Tensor idx = indices.contiguous();
  Tensor out = empty({count, 1, height, width}, float32);
  float* dst = out.data<float>();
  const int64_t* at = idx.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    if (at[i] < 0 || at[i] >= size())
      throw IndexError("[mnist_images] expected indices in [0, " +
                       std::to_string(size()) + "), got " +
                       std::to_string(at[i]));
    scale_image(*this, at[i], dst + i * height * width);
  }
  return out;
}

MnistData load_mnist(const std::string& dir, const std::string& split) {
  MnistBytes bytes = load_mnist_bytes(dir, split);
  MnistData out{bytes.images(0, bytes.size()), bytes.labels};
  return out;
}

}  // namespace tapeflow::io
