#include "metrics/progress_line.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ptdp {

std::string clock_time(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto total = static_cast<int64_t>(std::llround(seconds));
  int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  return h > 0 ? fmt::format("{}:{:02}:{:02}", h, m, s) : fmt::format("{:02}:{:02}", m, s);
}

namespace {

std::string rate(double per_s) {
  if (per_s >= 1e6) return fmt::format("{:.2f}M", per_s / 1e6);
  if (per_s >= 1e3) return fmt::format("{:.1f}k", per_s / 1e3);
  return fmt::format("{:.0f}", per_s);
}

// A tiny CPU run and a large GPU run differ by six orders of magnitude; a fixed TFLOP/s would
// print 0.00 for the one.
std::string flop_rate(double tflops) {
  if (tflops >= 1.0) return fmt::format("{:.1f} TFLOP/s", tflops);
  if (tflops >= 1e-3) return fmt::format("{:.1f} GFLOP/s", tflops * 1e3);
  return fmt::format("{:.1f} MFLOP/s", tflops * 1e6);
}

}  // namespace

std::string progress_line(const StepMetrics& metrics, int64_t total_steps, double elapsed_s) {
  std::string line = fmt::format("step {}/{} | loss {:.4f}", metrics.step, total_steps, metrics.loss);
  if (metrics.val_loss) line += fmt::format(" | val {:.4f}", *metrics.val_loss);
  double eta = metrics.step > 0 ? elapsed_s / static_cast<double>(metrics.step) *
                                      static_cast<double>(total_steps - metrics.step)
                                : NAN;
  // A skipped fp16 step's norm is NaN of either sign; "-nan" would read as a value.
  line += fmt::format(" | lr {:.1e} | grad {}", metrics.lr,
                      std::isnan(metrics.grad_norm) ? std::string("nan") : fmt::format("{:.2f}", metrics.grad_norm));
  if (metrics.loss_scale)
    line += fmt::format(" | loss scale {}{}, {} skipped", *metrics.loss_scale, metrics.skipped ? " (skipped)" : "",
                        metrics.steps_skipped);
  line += fmt::format(" | {} tok/s | {}/rank | {} elapsed, ETA {}", rate(metrics.tokens_per_s),
                      flop_rate(metrics.tflops_per_gpu), clock_time(elapsed_s), clock_time(eta));
  return line;
}

}  // namespace ptdp
