#include "ab/loss_parity.hpp"

#include <cmath>
#include <limits>

namespace ptdp {

LossParity compare_losses(const std::vector<StepMetrics>& baseline, const std::vector<StepMetrics>& arm,
                          double tolerance) {
  LossParity parity;
  const double inf = std::numeric_limits<double>::infinity();
  if (baseline.size() != arm.size()) parity.max_rel_diff = inf;
  size_t compared = 0;
  for (size_t i = 0; i < baseline.size() && i < arm.size(); ++i, ++compared) {
    const double a = baseline[i].loss, b = arm[i].loss;
    double diff;
    if (baseline[i].step != arm[i].step || std::isfinite(a) != std::isfinite(b))
      diff = inf;
    else if (!std::isfinite(a))
      diff = 0;  // both diverged at the same step
    else
      diff = std::abs(b - a) / std::max(std::abs(a), std::numeric_limits<double>::min());
    parity.mean_rel_diff += diff;
    parity.last_rel_diff = diff;
    if (diff > parity.max_rel_diff || parity.worst_step == 0) {
      parity.max_rel_diff = std::max(parity.max_rel_diff, diff);
      parity.worst_step = baseline[i].step;
    }
  }
  if (compared > 0) parity.mean_rel_diff /= double(compared);
  parity.equivalent = !baseline.empty() && parity.max_rel_diff <= tolerance;
  return parity;
}

}  // namespace ptdp
