#include "cpu/onednn/conv_chunks.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/relu_in_place.hpp"

namespace tapeflow::cpu::onednn {
namespace {

using dnnl::memory;

/**
 * A chunk's blocked input and output together stay within this, a core's
 * L2 on Zen 4: conv b's forward (4.8 MB of activations) runs 2-5 % faster in
 * chunks of 1 MiB than whole, and in 2 MiB ones no faster than whole.
 */
constexpr size_t kChunkBytes = size_t{1} << 20;
/**
 * The filter gradient, and a pass with bfloat16 activations, run whole up to
 * this many bytes of blocked activations: each chunk of a filter gradient
 * also sums a filter (a training step's takes the forward's conversions and
 * runs whole anyway), and in chunks the CNN sample's training step under
 * precision `medium` ran 4 % slower (its first layer, whose input only
 * changes type, in small chunks; each thread converting the filter), where
 * in float32 it ran as fast.
 */
constexpr size_t kWholeBytes = size_t{16} << 20;
/**
 * Whole-batch activations (blocked input and output) up to this a pass in
 * chunks also converts for a later pass: the size the whole-batch passes
 * left, within the L3. Beyond it the later pass's reorders in cache cost no
 * more than writing the blocked copy to memory (conv c's training step, 51
 * MB: 106 ms either way) and the copy would double the input's memory.
 */
constexpr size_t kHandoverBytes = size_t{16} << 20;

/** The bytes of `p`'s activations, x and y, in its own layouts. */
size_t activation_bytes(const ConvPrimitive& p) {
  return p.src.internal.get_desc().get_size() +
         p.dst.internal.get_desc().get_size();
}

/** Whether either activation of `p` reaches its primitive as bfloat16. */
bool takes_bf16(const ConvPrimitive& p) {
  constexpr auto bf16 = memory::data_type::bf16;
  return p.src.internal.get_desc().data_type() == bf16 ||
         p.dst.internal.get_desc().data_type() == bf16;
}

Shape with_images(Shape s, int64_t images) {
  s[0] = images;
  return s;
}

/**
 * `t`'s data from image n0 on, for `t` dense with the batch outermost
 * (contiguous or channels-last).
 */
void* image_data(const Tensor& t, int64_t n0) {
  return static_cast<char*>(t.raw_data()) +
         n0 * (t.numel() / t.shape()[0]) * itemsize(t.dtype());
}

/** Sets `o`'s internal memory to `buffer`, grown to fit when too small. */
void bind_buffer(ConvOperand& o, Tensor& buffer) {
  const size_t bytes = o.internal.get_desc().get_size();
  if (!buffer.defined() || buffer.numel() * sizeof(float) < bytes)
    buffer = buffer_for(o.internal.get_desc());
  o.internal.set_data_handle(buffer.raw_data());
}

/**
 * The bytes of one image where `chunk`, a layout of a few images, lays each
 * image out as `whole` (a layout of the batch) does, images outermost: then
 * a chunk's bytes are a slice of the whole batch's. 0 where it does not.
 */
size_t image_slice_bytes(const memory::desc& chunk, const memory::desc& whole) {
  const dnnl_memory_desc_t &c = chunk.data, &w = whole.data;
  if (c.ndims != w.ndims || c.data_type != w.data_type ||
      c.format_kind != dnnl_blocked || w.format_kind != dnnl_blocked ||
      c.offset0 != 0 || w.offset0 != 0 || c.extra.flags != 0 ||
      w.extra.flags != 0 || c.padded_dims[0] != c.dims[0] ||
      w.padded_dims[0] != w.dims[0])
    return 0;
  const dnnl_blocking_desc_t &cb = c.format_desc.blocking,
                             &wb = w.format_desc.blocking;
  if (cb.inner_nblks != wb.inner_nblks) return 0;
  for (int i = 0; i < cb.inner_nblks; ++i)
    if (cb.inner_idxs[i] == 0 || cb.inner_idxs[i] != wb.inner_idxs[i] ||
        cb.inner_blks[i] != wb.inner_blks[i])
      return 0;
  for (int i = 0; i < c.ndims; ++i)
    if ((i > 0 &&
         (c.dims[i] != w.dims[i] || c.padded_dims[i] != w.padded_dims[i])) ||
        cb.strides[i] != wb.strides[i])
      return 0;
  // Images outermost: one image's stride spans the rest of each layout.
  const size_t image_bytes =
      size_t(wb.strides[0]) * dnnl_data_type_size(w.data_type);
  const bool outermost = chunk.get_size() == size_t(c.dims[0]) * image_bytes &&
                         whole.get_size() == size_t(w.dims[0]) * image_bytes;
  return outermost ? image_bytes : 0;
}

/**
 * The whole batch's input activation in one layout, filled a chunk at a
 * time where each chunk's layout is a slice of it (`complete` stays true
 * while every one was).
 */
struct WholeInput {
  memory::desc layout;
  Tensor data;
  std::atomic<bool> complete{true};
};

/**
 * Points activation `o` at images n0.. of `t` and, when reordered, its
 * internal memory at `buffer`, reordering an input in: into its images'
 * slice of `whole`'s data instead where given and the layouts agree.
 */
void bind_activation(ConvOperand& o, const Tensor& t, int64_t n0,
                     Tensor& buffer, bool input, dnnl::stream& stream,
                     WholeInput* whole = nullptr) {
  o.user.set_data_handle(image_data(t, n0));
  if (!o.reordered) {
    if (whole) whole->complete = false;  // nothing converts these images
    return;
  }
  const size_t image_bytes =
      whole ? image_slice_bytes(o.internal.get_desc(), whole->layout) : 0;
  if (image_bytes != 0) {
    o.internal.set_data_handle(static_cast<char*>(whole->data.raw_data()) +
                               size_t(n0) * image_bytes);
  } else {
    if (whole) whole->complete = false;
    bind_buffer(o, buffer);
  }
  if (input) reorder_input(o, stream);
}

/**
 * Points the filter input `o` at `w`, converted into `buffer` once per
 * layout (`converted` names the layout `buffer` holds).
 */
void bind_filter(ConvOperand& o, const Tensor& w, Tensor& buffer,
                 memory::desc& converted, dnnl::stream& stream) {
  o.user.set_data_handle(w.raw_data());
  if (!o.reordered) return;
  const bool fresh = !buffer.defined() || o.internal.get_desc() != converted;
  bind_buffer(o, buffer);
  if (!fresh) return;
  converted = o.internal.get_desc();
  o.reorder.execute(stream, o.user, o.internal);
}

/** sum[i] += part[i] for the first `count` floats of each. */
void add_into(const Tensor& sum, const Tensor& part, int64_t count) {
  float* s = static_cast<float*>(sum.raw_data());
  const float* p = static_cast<const float*>(part.raw_data());
  for (int64_t i = 0; i < count; ++i) s[i] += p[i];
}

/**
 * One thread's filter gradient: chunks add into a sum in their primitive's
 * layout, which goes to the plain float32 `total` when a chunk brings
 * another layout (a shorter last chunk may) and at the end.
 */
class FilterGradientSum {
 public:
  explicit FilterGradientSum(const Tensor& w) : w_(w) {}

  /** Binds chunk primitive `p`'s output; call add() after it ran. */
  void bind(ConvPrimitive& p) {
    const bool same = open_ && p.weights.internal.get_desc() == layout_;
    if (!same) flush();
    bind_buffer(p.weights, same ? part_ : sum_);
    adds_ = same;
    if (!same) {
      open_ = &p.weights;
      layout_ = p.weights.internal.get_desc();
    }
  }
  void add(dnnl::stream& stream) {
    if (!adds_) return;
    stream.wait();
    add_into(sum_, part_, layout_.get_size() / sizeof(float));
  }
  /** The plain sum of every chunk bound so far. */
  Tensor total() {
    flush();
    return total_;
  }

 private:
  void flush() {
    if (!open_) return;
    Tensor plain = empty_tensor(w_.shape(), float32, Device::cpu());
    open_->internal.set_data_handle(sum_.raw_data());
    if (open_->reordered) {
      dnnl::stream& stream = onednn::stream();
      open_->user.set_data_handle(plain.raw_data());
      open_->reorder.execute(stream, open_->internal, open_->user);
      stream.wait();
    } else {
      std::memcpy(plain.raw_data(), sum_.raw_data(),
                  plain.numel() * sizeof(float));
    }
    if (total_.defined())
      add_into(total_, plain, plain.numel());
    else
      total_ = plain;
    open_ = nullptr;
  }

  const Tensor& w_;
  Tensor sum_, part_, total_;
  ConvOperand* open_ = nullptr;  // the operand whose layout sum_ holds
  memory::desc layout_;
  bool adds_ = false;
};

/**
 * Runs images [begin, end) on the calling thread, `images_per_chunk` at a
 * time, with primitives made for one thread; for the filter gradient,
 * returns their plain sum.
 */
Tensor run_chunks(ConvPass pass, const ConvAttrs& a, const Tensor& x,
                  const Tensor& w, const Tensor& y, const Tensor& bias,
                  bool bf16, int64_t images_per_chunk, int64_t begin,
                  int64_t end, bool relu, WholeInput* whole) {
  // In an OpenMP region oneDNN runs a primitive on one thread whatever it
  // was made for, so it must be made for one: a filter gradient made for 2
  // waits at its reduction barrier for a thread that never comes.
  sync_threads(1);
  dnnl::stream& stream = onednn::stream();
  Tensor x_buffer, y_buffer, w_buffer;  // this thread's internal memory
  memory::desc w_layout;
  FilterGradientSum sum(w);
  const CallerLayouts layouts = caller_layouts(x, y);
  for (int64_t n0 = begin; n0 < end; n0 += images_per_chunk) {
    const int64_t images = std::min(images_per_chunk, end - n0);
    ConvPrimitive& p = conv_primitive(pass, a, with_images(x.shape(), images),
                                      w.shape(), with_images(y.shape(), images),
                                      bias.defined(), bf16, 1, layouts);
    bind_activation(p.src, x, n0, x_buffer, pass != ConvPass::grad_input,
                    stream, pass == ConvPass::forward ? whole : nullptr);
    bind_activation(p.dst, y, n0, y_buffer, pass != ConvPass::forward, stream,
                    pass == ConvPass::grad_input ? whole : nullptr);
    if (pass == ConvPass::grad_filter) {
      sum.bind(p);
      run_primitive(p, pass, bias, stream);
      sum.add(stream);
      continue;
    }
    bind_filter(p.weights, w, w_buffer, w_layout, stream);
    run_primitive(p, pass, bias, stream);
    reorder_output(p, pass, stream);
    if (relu) {
      stream.wait();
      relu_in_place(static_cast<float*>(image_data(y, n0)),
                    images * (y.numel() / y.shape()[0]));
    }
  }
  stream.wait();
  return pass == ConvPass::grad_filter ? sum.total() : Tensor();
}

}  // namespace

int64_t images_per_chunk(const ConvPrimitive& whole, ConvPass pass, int64_t n,
                         int threads) {
  if (n < 2 || !whole.src.reordered || !whole.dst.reordered) return n;
  // Each thread runs its own share of the images: where one share is an
  // image longer than another and the shares are short, the others idle
  // longer than the chunks save.
  if (n % threads != 0 && n < 8 * threads) return n;
  const size_t bytes = activation_bytes(whole);
  const bool stays_whole = pass == ConvPass::grad_filter || takes_bf16(whole);
  if (bytes <= (stays_whole ? kWholeBytes : kChunkBytes)) return n;
  return std::clamp<int64_t>(kChunkBytes / (bytes / n), 1, n);
}

bool hands_over_chunked(const ConvPrimitive& whole) {
  return activation_bytes(whole) <= kHandoverBytes;
}

Tensor run_chunked(ConvPass pass, const ConvAttrs& a, const Tensor& x,
                   const Tensor& w, const Tensor& y, const Tensor& bias,
                   bool bf16, int threads, int64_t images_per_chunk, bool relu,
                   const memory::desc* whole_input) {
  const int64_t n = x.shape()[0];
  std::unique_ptr<WholeInput> whole;
  if (whole_input && pass != ConvPass::grad_filter) {
    whole = std::make_unique<WholeInput>();
    whole->layout = *whole_input;
    whole->data = buffer_for(*whole_input);
  }
  const int shares = static_cast<int>(std::min<int64_t>(threads, n));
  std::vector<Tensor> sums(shares);
  std::vector<std::exception_ptr> errors(shares);
  // OpenMP may start fewer threads than asked (OMP_DYNAMIC,
  // OMP_THREAD_LIMIT): each runs every share its number comes to.
  const auto run_shares = [&](int first, int step) {
    for (int t = first; t < shares; t += step) {
      try {
        sums[t] =
            run_chunks(pass, a, x, w, y, bias, bf16, images_per_chunk,
                       n * t / shares, n * (t + 1) / shares, relu, whole.get());
      } catch (...) {
        errors[t] = std::current_exception();
      }
    }
  };
  if (shares == 1) {
    run_shares(0, 1);
  } else {
#pragma omp parallel num_threads(shares)
    run_shares(omp_get_thread_num(), omp_get_num_threads());
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (pass != ConvPass::grad_filter)
    return whole && whole->complete ? whole->data : Tensor();
  for (int t = 1; t < shares; ++t) add_into(sums[0], sums[t], w.numel());
  std::memcpy(w.raw_data(), sums[0].raw_data(), w.numel() * sizeof(float));
  return Tensor();
}

}  // namespace tapeflow::cpu::onednn
