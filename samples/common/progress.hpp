#pragma once
// A training progress display: a bar with ETA, loss and throughput that
// redraws in place on a terminal, and plain periodic lines otherwise (logs,
// CI).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace samples {

class Progress {
 public:
  Progress(std::string label, int64_t steps, int64_t items_per_step)
      : label_(std::move(label)),
        steps_(steps),
        items_per_step_(items_per_step),
        tty_(isatty(fileno(stdout))),
        start_(Clock::now()) {}

  /** After `step` (1-based) steps; `loss` is the latest (or running) loss. */
  void update(int64_t step, double loss) {
    const double elapsed = seconds();
    const double rate = elapsed > 0 ? step * items_per_step_ / elapsed : 0;
    const double eta = step > 0 ? elapsed / step * (steps_ - step) : 0;
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled =
          static_cast<int>(kWidth * step / std::max<int64_t>(steps_, 1));
      std::string bar(kWidth, ' ');
      for (int i = 0; i < filled; ++i) bar[i] = '=';
      if (filled < kWidth) bar[filled] = '>';
      std::printf("\r%s [%s] %3d%%  ETA %s  loss %.4f  %.0f img/s ",
                  label_.c_str(), bar.c_str(),
                  static_cast<int>(100 * step / std::max<int64_t>(steps_, 1)),
                  clock_text(eta).c_str(), loss, rate);
      std::fflush(stdout);
    } else if (step == steps_ ||
               step % std::max<int64_t>(steps_ / 10, 1) == 0) {
      std::printf("%s step %lld/%lld  loss %.4f  %.0f img/s  ETA %s\n",
                  label_.c_str(), static_cast<long long>(step),
                  static_cast<long long>(steps_), loss, rate,
                  clock_text(eta).c_str());
      std::fflush(stdout);
    }
  }

  /** Ends the bar's line (terminal) and returns the elapsed seconds. */
  double finish() {
    if (tty_) std::printf("\n");
    return seconds();
  }
  double seconds() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

 private:
  using Clock = std::chrono::steady_clock;
  static std::string clock_text(double s) {
    char buf[32];
    const int total = static_cast<int>(s + 0.5);
    std::snprintf(buf, sizeof buf, "%02d:%02d", total / 60, total % 60);
    return buf;
  }

  std::string label_;
  int64_t steps_;
  int64_t items_per_step_;
  bool tty_;
  Clock::time_point start_;
};

}  // namespace samples
