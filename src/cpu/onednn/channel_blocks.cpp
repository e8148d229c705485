#include "cpu/onednn/channel_blocks.hpp"

#include <algorithm>
#include <cstring>

#include "cpu/parallel.hpp"

namespace tapeflow::cpu::onednn {
namespace {

using dnnl::memory;

memory::format_tag channel_blocks_tag(size_t rank, int block) {
  static const memory::format_tag wide[] = {memory::format_tag::nCw16c,
                                            memory::format_tag::nChw16c,
                                            memory::format_tag::nCdhw16c};
  static const memory::format_tag narrow[] = {memory::format_tag::nCw8c,
                                              memory::format_tag::nChw8c,
                                              memory::format_tag::nCdhw8c};
  return (block == 16 ? wide : narrow)[rank - 3];
}

/**
 * Rows [begin, end) of `src`, one row an image's position with all its
 * channels: read in order, written as `blocks` runs of Block floats.
 */
template <int Block>
void copy_rows(const float* src, float* dst, int64_t begin, int64_t end,
               int64_t positions, int64_t blocks) {
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r / positions, p = r % positions;
    const float* in = src + r * blocks * Block;
    float* out = dst + (n * blocks * positions + p) * Block;
    for (int64_t b = 0; b < blocks; ++b)
      std::memcpy(out + b * positions * Block, in + b * Block,
                  Block * sizeof(float));
  }
}

}  // namespace

memory::format_tag channels_last_tag(size_t rank) {
  static const memory::format_tag tags[] = {memory::format_tag::nwc,
                                            memory::format_tag::nhwc,
                                            memory::format_tag::ndhwc};
  return tags[rank - 3];
}

int channel_block_of(const memory::desc& from, const memory::desc& to) {
  const memory::dims d = from.dims();
  constexpr auto f32 = memory::data_type::f32;
  if (d.size() < 3 || d.size() > 5 || to.dims() != d ||
      from != memory::desc(d, f32, channels_last_tag(d.size())))
    return 0;
  for (int block : {16, 8})
    if (d[1] % block == 0 &&
        to == memory::desc(d, f32, channel_blocks_tag(d.size(), block)))
      return block;
  return 0;
}

void copy_into_channel_blocks(const memory& from, const memory& to, int block) {
  const memory::dims d = from.get_desc().dims();
  int64_t positions = 1;  // of one image
  for (size_t i = 2; i < d.size(); ++i) positions *= d[i];
  const int64_t blocks = d[1] / block;
  const auto* src = static_cast<const float*>(from.get_data_handle());
  auto* dst = static_cast<float*>(to.get_data_handle());
  const auto copy = [&](int64_t begin, int64_t end) {
    if (block == 16)
      copy_rows<16>(src, dst, begin, end, positions, blocks);
    else
      copy_rows<8>(src, dst, begin, end, positions, blocks);
  };
  const int64_t rows = d[0] * positions;
  // A chunk's copy runs on its own thread (conv_chunks.cpp's team).
  if (omp_in_parallel())
    copy(0, rows);
  else
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / d[1]), copy);
}

}  // namespace tapeflow::cpu::onednn
