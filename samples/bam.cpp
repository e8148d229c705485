// Bidirectional associative memory (Kosko 1988): P bipolar pairs (x_k, y_k)
// stored in one correlation matrix W = sum_k x_k^T y_k, recalled by bouncing
// between the layers, y = threshold(x W) and x = threshold(y W^T), until
// neither changes. Shows recall from noisy cues in both directions, a few
// letter bitmaps paired with short codes, and how recall breaks down as more
// random pairs are stored. Exits 1 when the stored pairs do not come back
// from their clean cues (the sample's self-check).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tapeflow/tapeflow.hpp>
#include <vector>

#include "common/cli.hpp"
#include "common/progress.hpp"

namespace tpf = tapeflow;
using tpf::Tensor;

namespace {

// Recall provably settles (Kosko's energy decreases with every change), so
// this bound only guards against a bug.
constexpr int kMaxIterations = 100;

struct Options {
  int64_t n = 64;
  int64_t m = 64;
  int64_t pairs = 3;
  double noise = 0.15;
  uint64_t seed = 42;
  int64_t max_pairs = 0;
  int trials = 20;
  int threads = 1;
};

// Rows of +1/-1. Comparing with 0.5 rather than taking sign(u - 0.5) avoids
// a 0 where u is exactly 0.5.
Tensor random_bipolar(int64_t rows, int64_t cols) {
  return tpf::where(tpf::random_uniform({rows, cols}) < tpf::scalar(0.5f),
                    tpf::scalar(-1.f), tpf::scalar(1.f));
}

Tensor row(const Tensor& t, int64_t k) {
  return tpf::slice(t, {k, 0}, {1, -1});
}

// Flips exactly `flips` randomly chosen bits in every row, so the cue's
// distance from its stored pattern is the same for every pair.
Tensor flip_bits(const Tensor& patterns, int64_t flips) {
  const int64_t cols = patterns.dim(1);
  const Tensor signs =
      tpf::concat({tpf::full({flips}, -1.0), tpf::ones({cols - flips})}, 0);
  std::vector<Tensor> rows;
  for (int64_t k = 0; k < patterns.dim(0); ++k)
    rows.push_back(tpf::shuffle(signs));
  return patterns * tpf::stack(rows);
}

// Kosko's rule: a unit whose net input is exactly 0 keeps its state (sign()
// would make it 0, which is no bipolar value).
Tensor threshold(const Tensor& net, const Tensor& previous) {
  return tpf::where(net == tpf::scalar(0.f), previous, tpf::sign(net));
}

enum class Cue { x, y };

struct Recalled {
  Tensor x, y;
  int iterations;  // round trips between the layers, the last one idle
};

// Bits per row where a and b differ.
Tensor wrong_bits(const Tensor& a, const Tensor& b) {
  return tpf::sum(tpf::cast(a != b, tpf::float32), {1});
}

int64_t count_differences(const Tensor& a, const Tensor& b) {
  return tpf::sum(wrong_bits(a, b)).item<int64_t>();
}

// Each row of x and y is one cue; rows are recalled together, and the batch
// is stable when no unit of any row changes in a round trip.
Recalled recall(const Tensor& w, Tensor x, Tensor y, Cue cue) {
  const auto next_y = [&](const Tensor& from) {
    return threshold(tpf::matmul(from, w), y);
  };
  const auto next_x = [&](const Tensor& from) {
    return threshold(tpf::matmul(from, w, false, true), x);
  };
  for (int it = 1; it <= kMaxIterations; ++it) {
    Tensor new_x, new_y;
    if (cue == Cue::x) {
      new_y = next_y(x);
      new_x = next_x(new_y);
    } else {
      new_x = next_x(y);
      new_y = next_y(new_x);
    }
    const bool stable =
        count_differences(new_x, x) == 0 && count_differences(new_y, y) == 0;
    x = new_x;
    y = new_y;
    if (stable) return {x, y, it};
  }
  throw tpf::ValueError("[bam] recall did not settle within " +
                        std::to_string(kMaxIterations) + " iterations");
}

// The unknown side starts at +1 so that a unit with zero net input on the
// first pass has a state to keep.
Recalled recall_from(const Tensor& w, const Tensor& cue, Cue side) {
  const int64_t rows = cue.dim(0);
  if (side == Cue::x) return recall(w, cue, tpf::ones({rows, w.dim(1)}), side);
  return recall(w, tpf::ones({rows, w.dim(0)}), cue, side);
}

// Rows where both x and y equal the stored pair.
int64_t exact_pairs(const Tensor& x, const Tensor& y, const Tensor& xs,
                    const Tensor& ys) {
  const Tensor wrong = wrong_bits(x, xs) + wrong_bits(y, ys);
  return tpf::sum(tpf::cast(wrong == tpf::scalar(0.f), tpf::float32))
      .item<int64_t>();
}

// A stored pair is a fixed point when a pass in each direction leaves it as
// it is.
int64_t stable_pairs(const Tensor& w, const Tensor& xs, const Tensor& ys) {
  return exact_pairs(threshold(tpf::matmul(ys, w, false, true), xs),
                     threshold(tpf::matmul(xs, w), ys), xs, ys);
}

void print_noisy_recall(const Tensor& w, const Tensor& xs, const Tensor& ys,
                        Cue cue, double noise) {
  const Tensor& stored = cue == Cue::x ? xs : ys;
  const int64_t flips = std::llround(noise * stored.dim(1));
  const Tensor cues = flip_bits(stored, flips);
  std::printf("\nnoisy %s cues (%lld of %lld bits flipped) -> recall:\n",
              cue == Cue::x ? "x" : "y", static_cast<long long>(flips),
              static_cast<long long>(stored.dim(1)));
  std::printf("  pair  x bits wrong  y bits wrong  iterations  exact\n");
  for (int64_t k = 0; k < xs.dim(0); ++k) {
    const Recalled r = recall_from(w, row(cues, k), cue);
    const int64_t wrong_x = count_differences(r.x, row(xs, k));
    const int64_t wrong_y = count_differences(r.y, row(ys, k));
    std::printf("  %4lld  %12lld  %12lld  %10d  %s\n",
                static_cast<long long>(k), static_cast<long long>(wrong_x),
                static_cast<long long>(wrong_y), r.iterations,
                wrong_x + wrong_y == 0 ? "yes" : "no");
  }
}

// Returns whether every pair came back exactly from its clean x cue.
bool random_pairs_demo(const Options& o) {
  const Tensor xs = random_bipolar(o.pairs, o.n);
  const Tensor ys = random_bipolar(o.pairs, o.m);
  const Tensor w = tpf::matmul(xs, ys, /*transpose_a=*/true);
  const Recalled clean = recall_from(w, xs, Cue::x);
  const int64_t exact = exact_pairs(clean.x, clean.y, xs, ys);
  std::printf(
      "%lld random pairs, x of %lld bits, y of %lld bits, W = X^T Y %s\n"
      "clean x cues: %lld of %lld pairs recalled exactly (%d iterations)\n",
      static_cast<long long>(o.pairs), static_cast<long long>(o.n),
      static_cast<long long>(o.m), w.shape().str().c_str(),
      static_cast<long long>(exact), static_cast<long long>(o.pairs),
      clean.iterations);
  print_noisy_recall(w, xs, ys, Cue::x, o.noise);
  print_noisy_recall(w, xs, ys, Cue::y, o.noise);
  return exact == o.pairs;
}

// 5x5 letters ('#' on) paired with 6-bit codes ('+' on).
struct Letter {
  const char* bitmap;
  const char* code;
};
constexpr Letter kLetters[] = {
    {"#####"
     "..#.."
     "..#.."
     "..#.."
     "..#..",
     "+++---"},
    {"#...."
     "#...."
     "#...."
     "#...."
     "#####",
     "+-+-+-"},
    {"#...#"
     ".#.#."
     "..#.."
     ".#.#."
     "#...#",
     "-++-+-"},
};
constexpr int64_t kSide = 5;

Tensor bipolar_rows(const std::vector<std::string>& texts, char on) {
  std::vector<float> values;
  for (const auto& t : texts)
    for (char c : t) values.push_back(c == on ? 1.f : -1.f);
  return tpf::from_vector(values, {static_cast<int64_t>(texts.size()),
                                   static_cast<int64_t>(texts[0].size())});
}

std::string as_text(const Tensor& bipolar_row, char on, char off) {
  std::string text;
  for (float v : bipolar_row.to_vector<float>()) text += v > 0 ? on : off;
  return text;
}

// Prints 5x5 bitmaps side by side, with `note` right of the middle line.
void print_bitmaps(const std::vector<std::string>& bitmaps,
                   const std::string& note) {
  for (int64_t line = 0; line < kSide; ++line) {
    std::string text = "   ";
    for (const auto& b : bitmaps) text += "  " + b.substr(line * kSide, kSide);
    if (line == kSide / 2 && !note.empty()) text += "   " + note;
    std::printf("%s\n", text.c_str());
  }
  std::printf("\n");
}

// Returns whether every letter and code came back from its clean cue.
bool letters_demo(double noise) {
  std::vector<std::string> bitmaps, codes;
  for (const auto& l : kLetters) {
    bitmaps.push_back(l.bitmap);
    codes.push_back(l.code);
  }
  const Tensor xs = bipolar_rows(bitmaps, '#');
  const Tensor ys = bipolar_rows(codes, '+');
  const Tensor w = tpf::matmul(xs, ys, /*transpose_a=*/true);
  const int64_t flips = std::llround(noise * xs.dim(1));
  const Tensor noisy = flip_bits(xs, flips);
  std::printf(
      "\nletters <-> codes: stored, cue with %lld bits flipped, recalled\n\n",
      static_cast<long long>(flips));
  for (int64_t k = 0; k < xs.dim(0); ++k) {
    const Recalled r = recall_from(w, row(noisy, k), Cue::x);
    print_bitmaps(
        {bitmaps[k], as_text(row(noisy, k), '#', '.'), as_text(r.x, '#', '.')},
        "code " + as_text(r.y, '+', '-') + " (stored " + codes[k] + ")");
  }
  const Recalled from_codes = recall_from(w, ys, Cue::y);
  std::vector<std::string> recalled;
  for (int64_t k = 0; k < xs.dim(0); ++k)
    recalled.push_back(as_text(row(from_codes.x, k), '#', '.'));
  std::printf("the codes alone recall:\n\n");
  print_bitmaps(recalled, "");
  const Recalled from_letters = recall_from(w, xs, Cue::x);
  return exact_pairs(from_codes.x, from_codes.y, xs, ys) == xs.dim(0) &&
         exact_pairs(from_letters.x, from_letters.y, xs, ys) == xs.dim(0);
}

// Roughly geometric (x sqrt 2), so that both the few-pairs regime and the
// breakdown get rows.
std::vector<int64_t> sweep_sizes(int64_t max_pairs) {
  std::vector<int64_t> sizes;
  for (int64_t p = 1; p < max_pairs;
       p = std::max<int64_t>(p + 1, std::llround(p * std::sqrt(2.0))))
    sizes.push_back(p);
  sizes.push_back(max_pairs);
  return sizes;
}

void capacity_table(const Options& o) {
  const int64_t smaller = std::min(o.n, o.m);
  const int64_t max_pairs = o.max_pairs > 0 ? o.max_pairs : 2 * smaller;
  const int64_t flips_x = std::llround(o.noise * o.n);
  const int64_t flips_y = std::llround(o.noise * o.m);
  std::printf(
      "\ncapacity: Kosko's estimate is about min(n, m) = %lld pairs. For "
      "random pairs,\na signal-to-noise argument puts exact recall nearer\n"
      "min(n, m) / (2 ln min(n, m)) = %.1f.\n",
      static_cast<long long>(smaller), smaller / (2 * std::log(smaller)));
  struct Row {
    int64_t pairs, stable = 0, clean = 0, noisy_x = 0, noisy_y = 0;
  };
  std::vector<Row> rows;
  const auto sizes = sweep_sizes(max_pairs);
  samples::Progress progress("capacity", static_cast<int64_t>(sizes.size()),
                             o.trials);
  for (int64_t p : sizes) {
    Row r{p};
    for (int t = 0; t < o.trials; ++t) {
      const Tensor xs = random_bipolar(p, o.n);
      const Tensor ys = random_bipolar(p, o.m);
      const Tensor w = tpf::matmul(xs, ys, /*transpose_a=*/true);
      const auto exact = [&](const Recalled& rec) {
        return exact_pairs(rec.x, rec.y, xs, ys);
      };
      r.stable += stable_pairs(w, xs, ys);
      r.clean += exact(recall_from(w, xs, Cue::x));
      r.noisy_x += exact(recall_from(w, flip_bits(xs, flips_x), Cue::x));
      r.noisy_y += exact(recall_from(w, flip_bits(ys, flips_y), Cue::y));
    }
    rows.push_back(r);
    // The bar's "loss" is the share of pairs the clean cues did not recall,
    // its "img/s" memories per second.
    progress.update(static_cast<int64_t>(rows.size()),
                    1.0 - static_cast<double>(r.clean) / (p * o.trials));
  }
  progress.finish();
  std::printf(
      "\n%% of stored pairs, %d memories per P (noisy cues: %lld of %lld x "
      "bits or\n%lld of %lld y bits flipped). fixed point: the stored pair is "
      "stable; the\nother columns: the pair recalled exactly from its cue\n"
      "     P  P/min(n,m)  fixed point  clean x->y  noisy x->y  noisy y->x\n",
      o.trials, static_cast<long long>(flips_x), static_cast<long long>(o.n),
      static_cast<long long>(flips_y), static_cast<long long>(o.m));
  for (const Row& r : rows) {
    const double total = static_cast<double>(r.pairs * o.trials) / 100;
    std::printf("  %4lld  %10.2f  %10.1f%%  %9.1f%%  %9.1f%%  %9.1f%%\n",
                static_cast<long long>(r.pairs),
                static_cast<double>(r.pairs) / smaller, r.stable / total,
                r.clean / total, r.noisy_x / total, r.noisy_y / total);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Bidirectional associative memory (Kosko 1988): recall of bipolar "
      "pairs from noisy cues, and its capacity"};
  Options o;
  app.add_option("--n", o.n, "bits of the x patterns")
      ->check(CLI::Range(int64_t{2}, int64_t{4096}))
      ->capture_default_str();
  app.add_option("--m", o.m, "bits of the y patterns")
      ->check(CLI::Range(int64_t{2}, int64_t{4096}))
      ->capture_default_str();
  app.add_option("--pairs", o.pairs,
                 "random pairs stored for the recall demo; all must come back "
                 "from clean cues (the self-check)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--noise", o.noise, "fraction of a cue's bits flipped")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the random patterns and noise")
      ->capture_default_str();
  app.add_option("--max-pairs", o.max_pairs,
                 "largest P of the capacity sweep (0: 2 min(n, m))")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--trials", o.trials,
                 "random memories drawn per P in the capacity sweep")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // The matrices are tiny: extra threads cost more to wake than they save,
  // and far more when another process holds the cores.
  samples::add_threads_option(app, o.threads);
  CLI11_PARSE(app, argc, argv);

  return samples::run_sample(o.threads, [&] {
    tpf::manual_seed(o.seed);
    const bool random_ok = random_pairs_demo(o);
    const bool letters_ok = letters_demo(o.noise);
    capacity_table(o);
    if (!random_ok || !letters_ok) {
      std::fprintf(stderr,
                   "\nself-check failed: expected every stored %s to be "
                   "recalled exactly from its clean cue\n",
                   random_ok ? "letter" : "random pair");
      return 1;
    }
    std::printf("\nself-check passed: every stored pair recalled exactly\n");
    return 0;
  });
}
