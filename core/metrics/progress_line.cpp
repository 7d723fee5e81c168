#include "metrics/progress_line.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ptdp {

namespace {

// mm:ss, or h:mm:ss from an hour on.
std::string clock_time(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto total = static_cast<int64_t>(std::llround(seconds));
  int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  return h > 0 ? fmt::format("{}:{:02}:{:02}", h, m, s) : fmt::format("{:02}:{:02}", m, s);
}

std::string rate(double per_s) {
  if (per_s >= 1e6) return fmt::format("{:.2f}M", per_s / 1e6);
  if (per_s >= 1e3) return fmt::format("{:.1f}k", per_s / 1e3);
  return fmt::format("{:.0f}", per_s);
}

}  // namespace

std::string progress_line(const StepMetrics& metrics, int64_t total_steps, double elapsed_s) {
  std::string line = fmt::format("step {}/{} | loss {:.4f}", metrics.step, total_steps, metrics.loss);
  if (metrics.val_loss) line += fmt::format(" | val {:.4f}", *metrics.val_loss);
  double eta = metrics.step > 0 ? elapsed_s / static_cast<double>(metrics.step) *
                                      static_cast<double>(total_steps - metrics.step)
                                : NAN;
  line += fmt::format(" | lr {:.1e} | grad {:.2f} | {} tok/s | {:.2f} TFLOP/s/rank | {} elapsed, ETA {}",
                      metrics.lr, metrics.grad_norm, rate(metrics.tokens_per_s),
                      metrics.tflops_per_gpu, clock_time(elapsed_s), clock_time(eta));
  return line;
}

}  // namespace ptdp
