// matmul: products of up to 64^3 multiply-adds per matrix through LIBXSMM
// (cpu/libxsmm/small_matmul.cpp), larger float32 ones through oneDNN
// (primitives cached by shapes, strides and operand type), larger float64 ones
// through BLAS dgemm (oneDNN has no f64 matmul on CPU).
// Under float32 precision `medium` both operands are converted to bfloat16 in
// their own layouts (converting into the primitive's preferred blocked weights
// costs more than the bfloat16 product saves at batch 64); the product stays
// float32.
#include <cblas.h>

#include <array>
#include <dnnl.hpp>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/bf16_convert.hpp"
#include "cpu/libxsmm/small_matmul.hpp"
#include "cpu/matrix_layout.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/onednn/converted_operand.hpp"
#include "cpu/onednn/precision.hpp"
#include "cpu/onednn/signal_shield.hpp"
#include "cpu/parallel.hpp"
#include "ops/linalg_ops.hpp"

namespace tapeflow::cpu {
namespace {

using onednn::engine;

Tensor plain(const Tensor& t) {
  return matrix_layout(t) ? t : materialize(t);
}

/** Dims then strides of `t` padded to `rank` with broadcast (size-1) axes. */
using Layout = std::array<int64_t, 2 * kMaxRank>;
Layout padded(const Tensor& t, int64_t rank) {
  Layout l{};
  int64_t* dims = l.data();
  int64_t* strides = l.data() + kMaxRank;
  const int64_t lead = rank - t.rank();
  for (int64_t i = 0; i < rank; ++i) dims[i] = 1;
  for (int64_t i = 0; i < t.rank(); ++i) {
    dims[lead + i] = t.shape()[i];
    strides[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  // oneDNN wants a real stride even on size-1 axes: give each one the extent
  // of what lies inside it so that no two axes alias.
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (dims[i] != 1) continue;
    int64_t span = 1;
    for (int64_t j = i + 1; j < rank; ++j)
      span = std::max(span, strides[j] * dims[j]);
    strides[i] = span;
  }
  return l;
}

dnnl::memory::desc describe(
    const Layout& l, int64_t rank,
    dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc(
      dnnl::memory::dims(l.begin(), l.begin() + rank), type,
      dnnl::memory::dims(l.begin() + kMaxRank, l.begin() + kMaxRank + rank));
}

/**
 * One input as the caller holds it and, for bfloat16, as the primitive reads
 * it: the same strides, so the conversion runs over the span element by
 * element (gaps between rows included; they are not read as results). The
 * converted memory gets its buffer per call.
 */
struct Operand {
  dnnl::memory user, internal;
  int64_t bf16_span = 0;  // elements to convert; 0: the primitive reads user
};
Operand operand(const dnnl::memory::desc& user,
                const dnnl::memory::desc& internal) {
  Operand o{dnnl::memory(user, engine(), nullptr), {}};
  if (internal == user) {
    o.internal = o.user;
  } else {
    o.internal = dnnl::memory(internal, engine(), nullptr);
    o.bf16_span = static_cast<int64_t>(user.get_size() / sizeof(float));
  }
  return o;
}

/**
 * Element-wise conversion of a span: the same bytes serve every view over
 * it, the forward's operand and its transpose in the gradient alike.
 */
std::string bf16_layout(int64_t span) {
  return "bf16 span " + std::to_string(span);
}

/**
 * `t` converted for operand `o`, set as o.internal's data: taken from
 * `take` when one of those holds the same span, else converted into a
 * buffer that is added to `leave` (when given).
 */
Tensor convert(Operand& o, const Tensor& t,
               std::span<const ConvertedOperand> take,
               ConvertedOperands* leave) {
  const std::string layout = bf16_layout(o.bf16_span);
  for (const ConvertedOperand& c : take)
    if (c.source.raw_data() == t.raw_data() && c.layout == layout) {
      o.internal.set_data_handle(c.data.raw_data());
      return c.data;
    }
  // Two bfloat16 values per float32 element of the buffer.
  Tensor buffer =
      empty_tensor(Shape{(o.bf16_span + 1) / 2}, float32, Device::cpu());
  convert_to_bf16(static_cast<const float*>(t.raw_data()),
                  static_cast<uint16_t*>(buffer.raw_data()), o.bf16_span);
  o.internal.set_data_handle(buffer.raw_data());
  if (leave) leave->operands.push_back({t, buffer, layout});
  return buffer;
}

/** A primitive with its memory objects; only the data pointers change. */
struct Prepared {
  dnnl::matmul primitive;
  Operand a, b;
  dnnl::memory c;
  bool shielded;  // runs with the asynchronous signals blocked
};

struct Key {
  std::array<Layout, 3> layouts;
  int64_t rank, threads;
  bool bf16;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<int64_t>()(k.rank * 62 + k.threads * 2 + k.bf16);
    for (const Layout& l : k.layouts) h = onednn::hash_int64s(l, h);
    return h;
  }
};

/**
 * oneDNN's AVX2 GEMM skips packing whenever 1/M + 1/N >= 0.0038 (every product
 * up to 512 x 512, any batch-64 layer), and its unpacked kernel reads an
 * operand whose rows (a row-major B) or columns (a column-major A) lie a
 * multiple of 2 KiB apart through a few cache sets: on a Zen 3 core 512^3
 * ran at 66 GFLOP/s against 93 at 528^3, a 64x1024x1024 layer at 45 against
 * 85. Such an operand is first copied with a leading dimension 64 bytes
 * longer (a copy of one operand against an M x N x K product). Its AVX-512
 * GEMM weighs leading dimensions itself.
 */
bool unpacked_by_onednn(int64_t M, int64_t N) {
  static const bool avx512 = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  return !avx512 && 1.0 / double(M) + 1.0 / double(N) >= 0.0038;
}
/** `t` itself, or a copy with a longer leading dimension if it would alias. */
Tensor unaliased(const Tensor& t, bool column_major_aliases) {
  const MatrixLayout layout = *matrix_layout(t);
  if (layout.column_major != column_major_aliases || layout.ld % 512 != 0)
    return t;
  const int64_t r = t.rank();
  // The copy's leading axis is the one the layout strides by ld.
  const int64_t inner = layout.column_major ? r - 2 : r - 1;
  std::vector<int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[inner], perm[r - 1]);
  Shape padded_shape;
  for (int64_t axis : perm) padded_shape.push_back(t.shape()[axis]);
  padded_shape[r - 1] += 16;
  const Tensor padded =
      empty_tensor(padded_shape, float32, t.device(), "matmul");
  Shape strides(padded.strides());
  std::swap(strides[inner], strides[r - 1]);
  const Tensor copy = make_view(padded, t.shape(), strides, 0);
  write_into(copy, t, "matmul");
  return copy;
}

void matmul_f32(const MatMul& op, const Tensor& given_a, const Tensor& given_b,
                const Outputs& outs) {
  Tensor& out = outs[0];
  const int64_t rank = out.rank();
  const bool unpacked =
      unpacked_by_onednn(out.shape()[rank - 2], out.shape()[rank - 1]);
  const Tensor a = unpacked ? unaliased(given_a, true) : given_a;
  const Tensor b = unpacked ? unaliased(given_b, false) : given_b;
  // A product too small to pay for waking a second thread runs on one: the
  // MLP step (64-wide layers, batch 32) took 63 us at 2 threads, 33 at 1.
  const int64_t macs = out.numel() * a.shape()[a.rank() - 1];
  const Key key{{padded(a, rank), padded(b, rank), padded(out, rank)},
                rank,
                macs < kParallelMacs ? 1 : onednn::call_threads(),
                multiply_in_bf16()};
  // Per thread: memory objects are not shared, so no lock on the hot path.
  thread_local std::unordered_map<Key, Prepared, KeyHash> cache;
  dnnl::stream& stream = onednn::stream();
  // Before any primitive is made: each takes its thread count from OpenMP
  // when made, not when run.
  onednn::sync_threads(key.threads);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const auto in = operand_type(key.bf16);
    const auto amd = describe(key.layouts[0], rank),
               bmd = describe(key.layouts[1], rank),
               cmd = describe(key.layouts[2], rank);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(describe(key.layouts[0], rank, in),
                           describe(key.layouts[1], rank, in), cmd),
        engine());
    it = cache
             .emplace(key,
                      Prepared{dnnl::matmul(pd), operand(amd, pd.src_desc()),
                               operand(bmd, pd.weights_desc()),
                               dnnl::memory(cmd, engine(), nullptr),
                               onednn::moves_stack_pointer(pd)})
             .first;
  }
  Prepared& p = it->second;
  p.a.user.set_data_handle(a.raw_data());
  p.b.user.set_data_handle(b.raw_data());
  p.c.set_data_handle(out.raw_data());
  // Only bfloat16 operands are converted, so only they are worth leaving.
  const auto take = converted_in(op.converted, key.bf16);
  auto left = key.bf16 && outs.keeps_payload()
                  ? std::make_shared<ConvertedOperands>(true)
                  : nullptr;
  Tensor converted[2];  // alive until the product ends
  if (p.a.bf16_span > 0) converted[0] = convert(p.a, a, take, left.get());
  if (p.b.bf16_span > 0) converted[1] = convert(p.b, b, take, left.get());
  const onednn::SignalShield shield(p.shielded, key.threads);
  p.primitive.execute(stream, {{DNNL_ARG_SRC, p.a.internal},
                               {DNNL_ARG_WEIGHTS, p.b.internal},
                               {DNNL_ARG_DST, p.c}});
  stream.wait();
  if (left) outs.leave(std::move(left));
}

void matmul_f64(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t r = out.rank();
  const int64_t M = out.shape()[r - 2], N = out.shape()[r - 1],
                K = a.shape()[a.rank() - 1];
  Shape batch;
  for (int64_t i = 0; i + 2 < r; ++i) batch.push_back(out.shape()[i]);
  // plain() made both operands row- or column-major.
  const auto layout = [](const Tensor& t) {
    const MatrixLayout l = *matrix_layout(t);
    return std::pair{l.column_major ? CblasTrans : CblasNoTrans, l.ld};
  };
  const auto [ta, lda] = layout(a);
  const auto [tb, ldb] = layout(b);
  const double* pa = static_cast<const double*>(a.raw_data());
  const double* pb = static_cast<const double*>(b.raw_data());
  double* pc = static_cast<double*>(out.raw_data());
  for (int64_t k = 0; k < batch.numel(); ++k)
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0,
                pa + batch_offset(a, batch, k), lda,
                pb + batch_offset(b, batch, k), ldb, 0.0, pc + k * M * N,
                std::max<int64_t>(N, 1));
}

void matmul(const MatMul& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  const Tensor a = plain(in[0]), b = plain(in[1]);
  if (a.shape()[a.rank() - 1] == 0) {
    std::fill_n(static_cast<char*>(out.raw_data()),
                out.numel() * itemsize(out.dtype()), 0);
    return;
  }
  const bool bf16 = out.dtype() == float32 && multiply_in_bf16();
  if (!bf16 && small_matmul(a, b, out)) return;
  if (out.dtype() == float32)
    matmul_f32(op, a, b, outs);
  else
    matmul_f64(a, b, out);
}

}  // namespace

void register_matmul(Registry& r) {
  r.set<MatMul>(DeviceType::cpu, matmul, "libxsmm/onednn");
}

}  // namespace tapeflow::cpu
