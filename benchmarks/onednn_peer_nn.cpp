// Raw oneDNN peers of the nn cases: primitives created once outside the timed
// loop, every operand in the layout oneDNN prefers (format any for
// convolutions, the blocked nChw16c/nChw8c for pooling and batch norm) and
// filled by reorders outside the loop. Outputs stay in those layouts: the
// best oneDNN can do, with no reorder back to the plain NCHW tapeflow returns.
// The channels-last convolutions take and return nhwc activations instead
// (the filter still in oneDNN's layout): what a caller holding NHWC gets.
#include <dnnl.hpp>
#include <random>
#include <unordered_map>
#include <vector>

#include "bench_cases.hpp"

namespace tfbench {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Args = std::unordered_map<int, memory>;

struct Ctx {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream s{eng};
};

memory::desc any(const memory::dims& d) {
  return memory::desc(d, memory::data_type::f32, memory::format_tag::any);
}

/** Memory of `md` holding uniform(-1, 1) values (reordered from nchw). */
memory filled(Ctx& c, const memory::desc& md) {
  static std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const memory::dims d = md.dims();
  memory::dims strides(d.size());
  memory::dim st = 1;
  for (size_t i = d.size(); i-- > 0;) strides[i] = st, st *= d[i];
  const memory::desc plain(d, memory::data_type::f32, strides);
  memory src(plain, c.eng);
  float* p = static_cast<float*>(src.get_data_handle());
  for (size_t i = 0; i < plain.get_size() / sizeof(float); ++i)
    p[i] = dist(gen);
  memory dst(md, c.eng);
  dnnl::reorder(src, dst).execute(c.s, src, dst);
  c.s.wait();
  return dst;
}

/** Blocked activation layout of the machine's widest vectors. */
memory::format_tag blocked() {
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa >= dnnl::cpu_isa::avx512_core ? memory::format_tag::nChw16c
                                           : memory::format_tag::nChw8c;
}

/** Runs the (primitive, args) steps per iteration. */
void run(benchmark::State& state, Ctx& c,
         const std::vector<std::pair<dnnl::primitive, Args>>& steps,
         const std::string& label) {
  for (const auto& [p, a] : steps) p.execute(c.s, a);  // warm-up
  c.s.wait();
  for (auto _ : state) {
    for (const auto& [p, a] : steps) p.execute(c.s, a);
    c.s.wait();
    benchmark::ClobberMemory();
  }
  state.SetLabel(label);
}

}  // namespace

void onednn_conv2d(benchmark::State& state, ConvShape s, bool train,
                   bool channels_last) {
  Ctx c;
  const int64_t out = s.hw + 2 * s.pad - s.k + 1;
  const memory::dims xd{s.n, s.c, s.hw, s.hw}, wd{s.o, s.c, s.k, s.k},
      yd{s.n, s.o, out, out}, st{1, 1}, pad{s.pad, s.pad};
  // Activations in oneDNN's choice of layout, or the nhwc a caller holds.
  const auto activation = [&](const memory::dims& d) {
    return channels_last ? memory::desc(d, memory::data_type::f32,
                                        memory::format_tag::nhwc)
                         : any(d);
  };
  const auto algo = algorithm::convolution_direct;
  using Fwd = dnnl::convolution_forward;
  const Fwd::primitive_desc fwd(
      Fwd::desc(
          train ? prop_kind::forward_training : prop_kind::forward_inference,
          algo, activation(xd), any(wd), activation(yd), st, pad, pad),
      c.eng);
  const memory x = filled(c, fwd.src_desc()), w = filled(c, fwd.weights_desc()),
               y(fwd.dst_desc(), c.eng);
  std::vector<std::pair<dnnl::primitive, Args>> steps{
      {Fwd(fwd),
       {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}}}};
  std::string label = fwd.impl_info_str();
  if (train) {
    using Bwd = dnnl::convolution_backward_data;
    using Bww = dnnl::convolution_backward_weights;
    const Bwd::primitive_desc bd(
        Bwd::desc(algo, activation(xd), any(wd), activation(yd), st, pad, pad),
        c.eng, fwd);
    const Bww::primitive_desc bw(
        Bww::desc(algo, activation(xd), any(wd), activation(yd), st, pad, pad),
        c.eng, fwd);
    // Operands in each primitive's own layout, prepared outside the loop.
    const memory dy = filled(c, bd.diff_dst_desc());
    const memory dy_w = bw.diff_dst_desc() == bd.diff_dst_desc()
                            ? dy
                            : filled(c, bw.diff_dst_desc());
    const memory w_d = bd.weights_desc() == fwd.weights_desc()
                           ? w
                           : filled(c, bd.weights_desc());
    const memory x_w =
        bw.src_desc() == fwd.src_desc() ? x : filled(c, bw.src_desc());
    steps.push_back({Bwd(bd),
                     {{DNNL_ARG_DIFF_DST, dy},
                      {DNNL_ARG_WEIGHTS, w_d},
                      {DNNL_ARG_DIFF_SRC, memory(bd.diff_src_desc(), c.eng)}}});
    steps.push_back(
        {Bww(bw),
         {{DNNL_ARG_SRC, x_w},
          {DNNL_ARG_DIFF_DST, dy_w},
          {DNNL_ARG_DIFF_WEIGHTS, memory(bw.diff_weights_desc(), c.eng)}}});
    label +=
        std::string(" | ") + bd.impl_info_str() + " | " + bw.impl_info_str();
  }
  run(state, c, steps, label);
  set_conv_flops(state, s, train);
}

void onednn_max_pool2d(benchmark::State& state, PoolShape s, bool train) {
  Ctx c;
  const auto* d = s.dims;
  const memory::dims xd{d[0], d[1], d[2], d[3]},
      yd{d[0], d[1], d[2] / 2, d[3] / 2}, k{2, 2};
  const memory::desc xmd(xd, memory::data_type::f32, blocked());
  using Fwd = dnnl::pooling_forward;
  const Fwd::primitive_desc fwd(
      Fwd::desc(
          train ? prop_kind::forward_training : prop_kind::forward_inference,
          algorithm::pooling_max, xmd, any(yd), k, k, {0, 0}, {0, 0}),
      c.eng);
  const memory x = filled(c, xmd), y(fwd.dst_desc(), c.eng);
  Args fa{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}};
  std::string label = fwd.impl_info_str();
  std::vector<std::pair<dnnl::primitive, Args>> steps;
  if (train) {
    const memory ws(fwd.workspace_desc(), c.eng);
    fa.insert({DNNL_ARG_WORKSPACE, ws});
    using Bwd = dnnl::pooling_backward;
    const Bwd::primitive_desc bd(
        Bwd::desc(algorithm::pooling_max, xmd, fwd.dst_desc(), k, k, {0, 0},
                  {0, 0}),
        c.eng, fwd);
    steps.push_back({Fwd(fwd), fa});
    steps.push_back({Bwd(bd),
                     {{DNNL_ARG_DIFF_DST, filled(c, bd.diff_dst_desc())},
                      {DNNL_ARG_WORKSPACE, ws},
                      {DNNL_ARG_DIFF_SRC, memory(bd.diff_src_desc(), c.eng)}}});
    label += std::string(" | ") + bd.impl_info_str();
  } else {
    steps.push_back({Fwd(fwd), fa});
  }
  run(state, c, steps, label);
}

void onednn_batch_norm(benchmark::State& state, bool train) {
  Ctx c;
  const auto* d = kBnShape;
  const memory::desc xmd({d[0], d[1], d[2], d[3]}, memory::data_type::f32,
                         blocked());
  const auto flags = dnnl::normalization_flags::use_scale_shift;
  using Fwd = dnnl::batch_normalization_forward;
  // forward_training: computes the batch statistics, as tapeflow's does.
  const Fwd::primitive_desc fwd(
      Fwd::desc(prop_kind::forward_training, xmd, float(kBnEps), flags), c.eng);
  const memory x = filled(c, xmd), ss = filled(c, fwd.weights_desc()),
               y(fwd.dst_desc(), c.eng), mean(fwd.mean_desc(), c.eng),
               var(fwd.variance_desc(), c.eng);
  std::vector<std::pair<dnnl::primitive, Args>> steps{
      {Fwd(fwd),
       {{DNNL_ARG_SRC, x},
        {DNNL_ARG_SCALE_SHIFT, ss},
        {DNNL_ARG_DST, y},
        {DNNL_ARG_MEAN, mean},
        {DNNL_ARG_VARIANCE, var}}}};
  std::string label = fwd.impl_info_str();
  if (train) {
    using Bwd = dnnl::batch_normalization_backward;
    const Bwd::primitive_desc bd(
        Bwd::desc(prop_kind::backward, xmd, xmd, float(kBnEps), flags), c.eng,
        fwd);
    steps.push_back(
        {Bwd(bd),
         {{DNNL_ARG_SRC, x},
          {DNNL_ARG_DIFF_DST, filled(c, xmd)},
          {DNNL_ARG_MEAN, mean},
          {DNNL_ARG_VARIANCE, var},
          {DNNL_ARG_SCALE_SHIFT, ss},
          {DNNL_ARG_DIFF_SRC, memory(bd.diff_src_desc(), c.eng)},
          {DNNL_ARG_DIFF_SCALE_SHIFT, memory(bd.diff_weights_desc(), c.eng)}}});
    label += std::string(" | ") + bd.impl_info_str();
  }
  run(state, c, steps, label);
}

}  // namespace tfbench
