#include "summary/image_pixels.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include "core/op_error.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::summary::detail {

namespace {

constexpr const char* kOp = "summary.image";

uint8_t pixel_of_float(double v, size_t index) {
  if (std::isnan(v))
    throw op_error<ValueError>(kOp,
                               "expected pixels in [0, 1], got nan at "
                               "flat index ",
                               index);
  return static_cast<uint8_t>(std::clamp(v * 255.5, 0.0, 255.0));
}

uint8_t pixel_of_int(int64_t v, size_t index) {
  if (v < 0 || v > 255)
    throw op_error<ValueError>(kOp, "expected integer pixels in [0, 255], got ",
                               v, " at flat index ", index);
  return static_cast<uint8_t>(v);
}

}  // namespace

ImageBatch image_pixels(const Tensor& images, int max_outputs) {
  if (!images.defined())
    throw op_error<ValueError>(kOp, "expected a tensor, got an undefined one");
  const DType t = images.dtype();
  if (t == string_ || t == bool_)
    throw op_error<DTypeError>(kOp, "expected integer or floating pixels, got ",
                               dtype_name(t));
  const int64_t rank = images.rank();
  if (rank != 3 && rank != 4)
    throw op_error<ShapeError>(kOp,
                               "expected NHWC (rank 4) or HWC (rank 3) "
                               "images, got shape ",
                               images.shape().str());
  const Shape& s = images.shape();
  ImageBatch batch;
  batch.height = s[rank - 3];
  batch.width = s[rank - 2];
  batch.channels = s[rank - 1];
  if (batch.channels != 1 && batch.channels != 3 && batch.channels != 4)
    throw op_error<ShapeError>(kOp,
                               "expected 1, 3 or 4 channels (last "
                               "dimension), got shape ",
                               s.str());
  if (batch.height < 1 || batch.width < 1)
    throw op_error<ShapeError>(kOp,
                               "expected images of at least 1x1 pixels, "
                               "got shape ",
                               s.str());
  // libpng's own limit on a side (PNG_USER_WIDTH_MAX and _HEIGHT_MAX), checked
  // before the pixels are copied out, rather than after.
  constexpr int64_t kLargestSide = 1000000;
  if (batch.height > kLargestSide || batch.width > kLargestSide)
    throw op_error<ValueError>(kOp, "expected images of at most ", kLargestSide,
                               " pixels a side (PNG's limit), got shape ",
                               s.str());
  const int64_t n = rank == 4 ? std::min<int64_t>(s[0], max_outputs) : 1;
  const int64_t per_image = batch.height * batch.width * batch.channels;
  // Only the images that are written are copied to the host.
  const Tensor kept =
      rank == 4 ? slice(images, {0, 0, 0, 0}, {n, s[1], s[2], s[3]}) : images;
  try {
    batch.images.assign(n, std::vector<uint8_t>(per_image));
    if (is_floating(t)) {
      const auto v = kept.to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i)
        batch.images[i / per_image][i % per_image] = pixel_of_float(v[i], i);
    } else {
      const auto v = kept.to_vector<int64_t>();
      for (size_t i = 0; i < v.size(); ++i)
        batch.images[i / per_image][i % per_image] = pixel_of_int(v[i], i);
    }
  } catch (const std::bad_alloc&) {
    throw op_error<ResourceExhaustedError>(
        kOp, "expected images whose pixels fit in host memory, got ", n,
        " of shape ", kept.shape().str());
  }
  return batch;
}

}  // namespace tapeflow::summary::detail
