#pragma once
// The IDX format of MNIST and Fashion-MNIST (plain or gzip-compressed).
#include <cstdint>
#include <string>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::io {

/**
 * Reads an IDX file, plain or .gz (detected from the content, not the name).
 * Element types: unsigned byte, signed byte, short and int come back as an
 * int32 tensor holding the raw values (pixels 0..255, labels 0..9); float as
 * float32, double as float64. The shape is the file's dimensions. A bad magic
 * number, an unknown type code, a rank outside 1..8, missing or trailing data
 * are IOErrors naming the file.
 */
Tensor read_idx(const std::string& path);

/** Debian's dataset-fashion-mnist installs here. */
inline constexpr const char* kDefaultMnistDir =
    "/usr/share/datasets/fashion-mnist";

struct MnistData {
  Tensor images;  ///< float32 N×1×28×28 (N×1×H×W), pixels scaled to [0, 1]
  Tensor labels;  ///< int64 N
};

/**
 * One split of MNIST-format data with the pixels kept as the file's bytes: a
 * quarter of the memory of float32 images. A training loop converts one batch
 * at a time with `images`.
 */
struct MnistBytes {
  std::vector<uint8_t> pixels;  ///< N×H×W bytes, one image after another
  int64_t height = 0, width = 0;
  Tensor labels;  ///< int64 N

  int64_t size() const { return labels.defined() ? labels.shape()[0] : 0; }
  /** Images [begin, begin + count) as float32 count×1×H×W in [0, 1]. */
  Tensor images(int64_t begin, int64_t count) const;
  /** The images at the int64 `indices` (1-d) as float32 B×1×H×W in [0, 1]. */
  Tensor images(const Tensor& indices) const;
};

/** As load_mnist, with the pixels left as bytes. */
MnistBytes load_mnist_bytes(const std::string& dir = kDefaultMnistDir,
                            const std::string& split = "train");

/**
 * Loads one split ("train" or "t10k"; "test" means "t10k") of MNIST-format
 * data from `dir`: "<split>-images-idx3-ubyte" and
 * "<split>-labels-idx1-ubyte", each plain or with ".gz" (also the
 * "<split>-images.idx3-ubyte" spelling). Works for MNIST and Fashion-MNIST.
 */
MnistData load_mnist(const std::string& dir = kDefaultMnistDir,
                     const std::string& split = "train");

}  // namespace tapeflow::io
