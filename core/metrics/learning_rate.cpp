#include "metrics/learning_rate.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ptdp/error.hpp"

namespace ptdp {

double learning_rate(const RunConfig::Optimizer& optimizer, int64_t step, int64_t total_steps) {
  const double peak = optimizer.lr, floor = optimizer.min_lr;
  const int64_t warmup = optimizer.warmup_steps;
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);

  const int64_t decay_end = (optimizer.decay_steps > 0 ? optimizer.decay_steps : total_steps) - 1;
  const int64_t span = decay_end - warmup;
  const double progress =
      span > 0 ? std::clamp(static_cast<double>(step - warmup) / static_cast<double>(span), 0.0, 1.0)
               : 1.0;
  if (optimizer.decay == "constant") return peak;
  if (optimizer.decay == "linear") return peak - (peak - floor) * progress;
  if (optimizer.decay == "cosine")
    return floor + 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) * (peak - floor);
  throw Error("optimizer.decay: unknown schedule '" + optimizer.decay +
              "' (expected cosine, linear or constant)");
}

}  // namespace ptdp
