// The GPU convolution kernels' bodies on the host (src/core/conv_tile.hpp,
// conv_depthwise.hpp, conv_gemm_plan.hpp): each runs over its whole launch
// grid as the CUDA kernels in cuda/conv_*.cu call it, thread blocks emulated
// phase by phase, and the cuBLAS call lists run through a naive column-major
// GEMM with cuBLAS's argument rules. Forward (with and without bias), input
// gradient and filter gradient equal the direct float64 kernels on every
// geometry of test_conv's tables and more (partial tiles, several tiles
// along M, N and K, split-K), in channels-first, channels-last and mixed
// layouts. Operands lie between NaN guards: a stray read shows as NaN in a
// result, a stray write as a changed guard. White-box.
#include <cmath>
#include <map>

#include "conv_cases.hpp"
#include "core/conv_depthwise.hpp"
#include "core/conv_gemm_plan.hpp"
#include "core/conv_tile.hpp"

using namespace conv_cases;
using tpf::ConvBuffer;
using tpf::ConvGeometry;

namespace {

/** conv_tile.hpp's Block on the host: a phase is a loop over the threads. */
template <class State, int kThreads>
class HostBlock {
 public:
  template <class F>
  void for_each_thread(F&& f) {
    for (int t = 0; t < kThreads; ++t) f(t, states_[t]);
  }
  void sync() {}

 private:
  std::vector<State> states_ = std::vector<State>(kThreads);
};

/** A buffer of T between NaN guards. */
template <class T>
class Guarded {
 public:
  static constexpr int64_t kGuard = 4096;
  explicit Guarded(const Buffer& values = {})
      : v_(values.size() + 2 * kGuard, T(kNan)) {
    std::copy(values.begin(), values.end(), v_.begin() + kGuard);
  }
  T* data() { return v_.data() + kGuard; }
  int64_t size() const { return v_.size() - 2 * kGuard; }
  Buffer values() const {
    CHECK_MESSAGE(guards_intact(), "a kernel wrote outside its buffer");
    return Buffer(v_.begin() + kGuard, v_.end() - kGuard);
  }
  bool guards_intact() const {
    for (int64_t i = 0; i < kGuard; ++i)
      if (!std::isnan(v_[i]) || !std::isnan(v_[v_.size() - 1 - i]))
        return false;
    return true;
  }

 private:
  std::vector<T> v_;
};

/** One case's operands and outputs in T, and its bias at stride 2. */
template <class T>
struct Operands {
  ConvGeometry g;
  Guarded<T> x, w, dy, bias, y, dx, dw;
  Buffer bias_values;

  explicit Operands(const Problem& p)
      : g(p.g),
        x(p.x),
        w(p.w),
        dy(p.dy),
        y(Buffer(p.y_ref.numel(), kNan)),
        dx(Buffer(p.dx_ref.numel(), kNan)),
        dw(Buffer(p.dw_ref.numel(), kNan)) {
    bias_values = uniform64({p.g.o}).template to_vector<double>();
    Buffer strided(2 * p.g.o, kNan);
    for (int64_t o = 0; o < p.g.o; ++o) strided[2 * o] = bias_values[o];
    bias = Guarded<T>(strided);
  }
  const T* bias_or_null(bool with_bias) {
    return with_bias ? bias.data() : nullptr;
  }
  Results results() const { return {y.values(), dx.values(), dw.values()}; }
};

/** The problem's references with the bias added to y. */
Problem with_bias(Problem p, const Buffer& bias) {
  V shape(p.y_ref.rank(), 1);
  shape[1] = p.g.o;
  p.y_ref = p.y_ref + tpf::reshape(tpf::from_vector(bias, tpf::Shape({p.g.o})),
                                   tpf::Shape(shape));
  return p;
}

// ---- implicit GEMM (cuda/conv_implicit.cu) ----

/** Every block of the launch, then split-K's second pass. */
template <class Gemm, class T>
void launch_implicit(const ConvGeometry& g, const T* a, const T* b, T* c,
                     int64_t splits, const T* bias) {
  std::vector<T> slices;
  tpf::ImplicitOutput<T> out{c, nullptr, splits, bias, 2};
  for (int64_t group = 0; group < g.groups; ++group) {
    const Gemm gemm{g, group};
    const tpf::ImplicitGrid grid = tpf::implicit_grid(gemm, splits);
    if (splits > 1 && slices.empty()) {
      slices.assign(g.groups * splits * gemm.m() * gemm.n(), T(kNan));
      out.slices = slices.data();
    }
    for (int64_t s = 0; s < splits; ++s)
      for (int64_t tm = 0; tm < grid.tiles_m; ++tm)
        for (int64_t tn = 0; tn < grid.tiles_n; ++tn) {
          HostBlock<tpf::ImplicitAccum<T>, tpf::ImplicitTile::kThreads> block;
          tpf::ImplicitSmem<T> smem;
          tpf::implicit_gemm_block(gemm, a, b, out, tm, tn, s, smem, block);
        }
  }
  if (splits == 1) return;
  for (int64_t group = 0; group < g.groups; ++group) {
    const Gemm gemm{g, group};
    for (int64_t e = 0; e < gemm.m() * gemm.n(); ++e)
      tpf::implicit_sum_slices(gemm, out, e);
  }
}

template <class T>
Results by_implicit(Operands<T>& t, int64_t wgrad_splits, bool bias) {
  launch_implicit<tpf::FpropGemm>(t.g, t.x.data(), t.w.data(), t.y.data(), 1,
                                  t.bias_or_null(bias));
  launch_implicit<tpf::DgradGemm>(t.g, t.dy.data(), t.w.data(), t.dx.data(), 1,
                                  static_cast<const T*>(nullptr));
  launch_implicit<tpf::WgradGemm>(t.g, t.dy.data(), t.x.data(), t.dw.data(),
                                  wgrad_splits, static_cast<const T*>(nullptr));
  return t.results();
}

/** The split count cuda/conv_implicit.cu takes for this geometry. */
int64_t chosen_wgrad_splits(const ConvGeometry& g) {
  const tpf::WgradGemm gemm{g, 0};
  const tpf::ImplicitGrid grid = tpf::implicit_grid(gemm, 1);
  return tpf::implicit_wgrad_splits(
      grid.tiles_m * grid.tiles_n * g.groups, gemm.k(),
      g.groups * gemm.m() * gemm.n() * 8, int64_t{256} << 20);
}

// ---- depthwise (cuda/conv_depthwise.cu) ----

template <class T>
Results by_depthwise(Operands<T>& t, int64_t slices, bool bias) {
  const ConvGeometry& g = t.g;
  for (int64_t e = 0; e < g.n * g.o * g.out_size(); ++e)
    tpf::depthwise_forward(g, t.x.data(), t.w.data(), t.bias_or_null(bias),
                           int64_t{2}, t.y.data(), e);
  for (int64_t e = 0; e < g.n * g.c * g.in_size(); ++e)
    tpf::depthwise_grad_input(g, t.dy.data(), t.w.data(), t.dx.data(), e);
  tpf::DepthwiseFilterWork work = tpf::depthwise_filter_work(g);
  if (slices > 0) work.slices = slices;
  std::vector<T> partials(work.rows * work.slices, T(kNan));
  for (int64_t row = 0; row < work.rows; ++row)
    for (int64_t s = 0; s < work.slices; ++s) {
      HostBlock<T, tpf::DepthwiseFilterWork::kThreads> block;
      T scratch[tpf::DepthwiseFilterWork::kThreads];
      tpf::depthwise_filter_block(g, t.x.data(), t.dy.data(), work, row, s,
                                  scratch, partials.data(), block);
    }
  for (int64_t row = 0; row < work.rows; ++row)
    tpf::depthwise_filter_sum(g, work, partials.data(), t.dw.data(), row);
  return t.results();
}

// ---- cuBLAS paths (cuda/conv_gemm.cu) ----

/** The buffers a call list names. */
template <class T>
using BufferMap = std::map<ConvBuffer, T*>;

/** One BlasGemm as cuBLAS runs it, after cuBLAS's argument checks. */
template <class T>
void run_blas(const tpf::BlasGemm& call, const BufferMap<T>& buffers) {
  REQUIRE(tpf::fits_blas(call));
  const tpf::BlasOperand &a = call.a, &b = call.b, &c = call.c;
  REQUIRE(!c.transposed);
  REQUIRE(a.ld >= std::max<int64_t>(1, a.transposed ? call.k : call.m));
  REQUIRE(b.ld >= std::max<int64_t>(1, b.transposed ? call.n : call.k));
  REQUIRE(c.ld >= std::max<int64_t>(1, call.m));
  const T *pa = buffers.at(a.buffer), *pb = buffers.at(b.buffer);
  T* pc = buffers.at(c.buffer);
  for (int64_t batch = 0; batch < call.batch; ++batch)
    for (int64_t i = 0; i < call.m; ++i)
      for (int64_t j = 0; j < call.n; ++j) {
        T sum = 0;
        for (int64_t k = 0; k < call.k; ++k) {
          const int64_t ai = a.transposed ? k + i * a.ld : i + k * a.ld;
          const int64_t bi = b.transposed ? j + k * b.ld : k + j * b.ld;
          sum += pa[a.offset + batch * a.stride + ai] *
                 pb[b.offset + batch * b.stride + bi];
        }
        T& out = pc[c.offset + batch * c.stride + i + j * c.ld];
        out = call.accumulate ? out + sum : sum;
      }
}

template <class T>
void run_calls(const std::vector<tpf::BlasGemm>& calls,
               const BufferMap<T>& buffers) {
  REQUIRE(!calls.empty());
  for (const tpf::BlasGemm& call : calls) run_blas(call, buffers);
}

template <class T>
void fill_bias(Operands<T>& t) {
  const tpf::ColumnSplit split = tpf::column_split(t.g);
  for (int64_t plane = 0; plane < t.g.n * t.g.o; ++plane)
    for (uint32_t p = 0; p < uint32_t(t.g.out_size()); ++p)
      tpf::bias_fill_entry(t.g, split, t.bias.data(), int64_t{2}, t.y.data(),
                           plane, p);
}

template <class T>
Results by_gemm_1x1(Operands<T>& t, bool bias) {
  const ConvGeometry& g = t.g;
  if (bias) fill_bias(t);
  for (int64_t group = 0; group < g.groups; ++group) {
    run_calls<T>(tpf::gemm_1x1_forward(g, group, bias),
                 {{ConvBuffer::x, t.x.data()},
                  {ConvBuffer::w, t.w.data()},
                  {ConvBuffer::y, t.y.data()}});
    run_calls<T>(tpf::gemm_1x1_grad_input(g, group),
                 {{ConvBuffer::x, t.dx.data()},
                  {ConvBuffer::w, t.w.data()},
                  {ConvBuffer::y, t.dy.data()}});
    run_calls<T>(tpf::gemm_1x1_grad_filter(g, group),
                 {{ConvBuffer::x, t.x.data()},
                  {ConvBuffer::w, t.dw.data()},
                  {ConvBuffer::y, t.dy.data()}});
  }
  return t.results();
}

/** Chunk by chunk and group by group, as cuda/conv_gemm.cu runs them. */
template <class T>
Results by_im2col(Operands<T>& t, int64_t chunk, bool bias) {
  const ConvGeometry& g = t.g;
  if (bias) fill_bias(t);
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t images = std::min(chunk, g.n - n0);
    const int64_t rows = g.cg * g.k_size(), cols = images * g.out_size();
    for (int64_t group = 0; group < g.groups; ++group) {
      Guarded<T> col(Buffer(rows * cols, kNan));
      Guarded<T> gathered(Buffer(g.og * cols, kNan));
      const tpf::Im2col im2col{g, group, n0, images};
      const tpf::ColumnSplit split = tpf::column_split(g);
      for (int64_t row = 0; row < rows; ++row)
        for (uint32_t j = 0; j < uint32_t(cols); ++j)
          tpf::im2col_entry(im2col, im2col.row(row), split, t.x.data(),
                            col.data() + row * cols, j);
      run_calls<T>(tpf::im2col_forward(g, group, n0, images, bias),
                   {{ConvBuffer::w, t.w.data()},
                    {ConvBuffer::y, t.y.data()},
                    {ConvBuffer::col, col.data()}});
      const tpf::GroupOutput output{g, group, n0};
      for (int64_t o = 0; o < g.og; ++o)
        for (uint32_t j = 0; j < uint32_t(cols); ++j)
          tpf::gather_dy_entry(output, split, t.dy.data(),
                               gathered.data() + o * cols, o, j);
      run_calls<T>(tpf::im2col_grad_filter(g, group, n0, images),
                   {{ConvBuffer::w, t.dw.data()},
                    {ConvBuffer::col, col.data()},
                    {ConvBuffer::gathered_dy, gathered.data()}});
      // dgrad reuses the col buffer, as the device path does.
      run_calls<T>(tpf::im2col_grad_input(g, group, n0, images),
                   {{ConvBuffer::w, t.w.data()},
                    {ConvBuffer::y, t.dy.data()},
                    {ConvBuffer::col, col.data()}});
      const tpf::Col2imGather gather{g, group, n0, images};
      for (int64_t e = 0; e < gather.elements(); ++e)
        tpf::col2im_entry(gather, tpf::input_split(g), col.data(), t.dx.data(),
                          uint32_t(e));
      CHECK(col.guards_intact());
      CHECK(gathered.guards_intact());
    }
  }
  return t.results();
}

// ---- the cases ----

/** Geometries with several tiles along M, N and K, partial at each edge. */
std::vector<Case> tile_cases() {
  return {
      make_case("tiles_fprop_dgrad", {3, 20, 11, 13}, {70, 20, 3, 3}, {1}, {1},
                "SAME", {}, 1),
      make_case("tiles_grouped_strided", {2, 12, 17, 9}, {130, 6, 3, 2}, {2},
                {1}, "SAME", {}, 2),
      make_case("tiles_wgrad_long_k", {5, 9, 16, 15}, {66, 9, 2, 2}, {1}, {1},
                "VALID", {}, 1),
      make_case("one_by_one_grouped", {3, 6, 5, 4}, {10, 3, 1, 1}, {1}, {1},
                "VALID", {}, 2),
      make_case("one_by_one_wide", {2, 70, 3, 3}, {65, 70, 1, 1}, {1}, {1},
                "VALID", {}, 1),
      make_case("depthwise_many_rows", {2, 5, 23, 21}, {10, 1, 3, 3}, {1}, {1},
                "SAME", {}, 5),
  };
}

std::vector<Case> all_cases() {
  std::vector<Case> cases = option_table();
  for (auto list : {other_cases(), tile_cases()})
    cases.insert(cases.end(), list.begin(), list.end());
  return cases;
}

/** What has_work in cuda/conv.cu zero-fills before any kernel runs. */
bool has_work(const Problem& p) {
  return p.y_ref.numel() != 0 && p.dx_ref.numel() != 0 && p.dw_ref.numel() != 0;
}

bool is_1x1(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d)
    if (g.k[d] != 1 || g.stride[d] != 1 || g.pad[d] != 0 || g.in[d] != g.out[d])
      return false;
  return true;
}

/**
 * Whether the GEMM paths take the operands where they lie: a filter whose
 * (in-channel, tap) axes do not walk as one (channels-last with a kernel
 * larger than 1×1) is copied channels-first by cuda/conv.cu first, which
 * the channels-first layout's run covers.
 */
bool gemm_reads_in_place(const ConvGeometry& g) {
  return !tpf::gemm_1x1_forward(g, 0, false).empty() ||
         !tpf::im2col_forward(g, 0, 0, 1, false).empty();
}

/**
 * body(problem, filter_last) for every case `keep` accepts, in every
 * layout, where the kernels have work (case and layout captured for a
 * failure's message).
 */
template <class Body>
void for_each_problem(
    Body&& body, bool (*keep)(const Case&) = [](const Case&) { return true; }) {
  for (const Case& c : all_cases()) {
    if (!keep(c)) continue;
    for (const auto& [act_last, filter_last] : kLayouts) {
      CAPTURE(c.name);
      CAPTURE(act_last);
      CAPTURE(filter_last);
      const Problem p = problem(c, act_last, filter_last);
      if (has_work(p)) body(p, filter_last);
    }
  }
}

}  // namespace

TEST_CASE("implicit GEMM blocks: every geometry, layout and split") {
  int64_t runs = 0;
  for_each_problem([&](const Problem& p, bool) {
    for (int64_t splits : {int64_t{1}, int64_t{3}, chosen_wgrad_splits(p.g)})
      for (bool bias : {false, true}) {
        CAPTURE(splits);
        CAPTURE(bias);
        Operands<double> t(p);
        const Results r = by_implicit(t, splits, bias);
        check_results(bias ? with_bias(p, t.bias_values) : p, r);
        ++runs;
      }
  });
  CHECK(runs > 500);
}

TEST_CASE("implicit GEMM blocks in float32") {
  for (const Case& c : tile_cases()) {
    CAPTURE(c.name);
    const Problem p = problem(c, false, false);
    Operands<float> t(p);
    const Results r = by_implicit(t, chosen_wgrad_splits(p.g), true);
    const Problem ref = with_bias(p, t.bias_values);
    CHECK_CLOSE(view(r.y, p.yl), ref.y_ref, 1e-4, 1e-4);
    CHECK_CLOSE(view(r.dx, p.xl), ref.dx_ref, 1e-4, 1e-4);
    CHECK_CLOSE(view(r.dw, p.wl), ref.dw_ref, 1e-4, 1e-4);
  }
}

TEST_CASE("depthwise kernels: every one-channel-per-group geometry") {
  int64_t runs = 0;
  for_each_problem(
      [&](const Problem& p, bool) {
        for (int64_t slices : {0, 1, 3}) {
          CAPTURE(slices);
          Operands<double> t(p);
          const Results r = by_depthwise(t, slices, slices == 3);
          check_results(slices == 3 ? with_bias(p, t.bias_values) : p, r);
          ++runs;
        }
      },
      [](const Case& c) { return c.w[1] == 1; });
  CHECK(runs >= 40);
}

TEST_CASE("1x1 GEMM calls: every 1x1 geometry") {
  int64_t runs = 0;
  for_each_problem([&](const Problem& p, bool) {
    if (!is_1x1(p.g)) return;
    REQUIRE(gemm_reads_in_place(p.g));
    for (bool bias : {false, true}) {
      Operands<double> t(p);
      const Results r = by_gemm_1x1(t, bias);
      check_results(bias ? with_bias(p, t.bias_values) : p, r);
      ++runs;
    }
  });
  CHECK(runs >= 24);
}

TEST_CASE("im2col GEMM calls: every geometry, layout and chunk") {
  int64_t runs = 0;
  for_each_problem([&](const Problem& p, bool filter_last) {
    if (!gemm_reads_in_place(p.g)) {
      CHECK(filter_last);  // cuda/conv.cu copies it channels-first
      return;
    }
    for (int64_t chunk : {int64_t{1}, int64_t{2}, p.g.n}) {
      CAPTURE(chunk);
      Operands<double> t(p);
      const Results r = by_im2col(t, chunk, chunk == 2);
      check_results(chunk == 2 ? with_bias(p, t.bias_values) : p, r);
      ++runs;
    }
  });
  CHECK(runs > 300);
}

TEST_CASE("the chosen path of every geometry, as cuda/conv.cu runs it") {
  std::map<tpf::ConvAlgo, int64_t> taken;
  for (const Case& c : all_cases())
    for (const auto& [act_last, filter_last] : kLayouts)
      // A large device, and one whose col budget (limit / 16) holds only a
      // few images of the small cases, or none.
      for (int64_t limit : {int64_t{16} << 30, int64_t{64} << 10}) {
        CAPTURE(c.name);
        CAPTURE(act_last);
        CAPTURE(filter_last);
        CAPTURE(limit);
        Problem p = problem(c, act_last, filter_last);
        if (!has_work(p)) continue;
        const tpf::ConvChoice choice = tpf::choose_conv_algo(
            p.g, sizeof(double), tpf::ConvDeviceFacts{}, limit);
        ++taken[choice.algo];
        const bool gemm = choice.algo == tpf::ConvAlgo::gemm_1x1 ||
                          choice.algo == tpf::ConvAlgo::im2col_gemm;
        // conv.cu's copy of the inputs: channels-first, as the output is.
        if (gemm && !gemm_reads_in_place(p.g)) p = problem(c, false, false);
        Operands<double> t(p);
        Results r;
        switch (choice.algo) {
          case tpf::ConvAlgo::depthwise_direct:
            r = by_depthwise(t, 0, true);
            break;
          case tpf::ConvAlgo::gemm_1x1:
            r = by_gemm_1x1(t, true);
            break;
          case tpf::ConvAlgo::im2col_gemm:
            r = by_im2col(t, choice.images_per_chunk, true);
            break;
          case tpf::ConvAlgo::implicit_gemm:
            r = by_implicit(t, chosen_wgrad_splits(p.g), true);
            break;
        }
        check_results(with_bias(p, t.bias_values), r);
      }
  for (auto algo : {tpf::ConvAlgo::depthwise_direct, tpf::ConvAlgo::gemm_1x1,
                    tpf::ConvAlgo::im2col_gemm, tpf::ConvAlgo::implicit_gemm}) {
    CAPTURE(tpf::conv_algo_name(algo));
    CHECK(taken[algo] >= 6);
  }
}
