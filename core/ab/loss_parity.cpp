#include "ab/loss_parity.hpp"

#include <cmath>
#include <limits>

namespace ptdp {

LossParity compare_losses(const std::vector<StepMetrics>& baseline, const std::vector<StepMetrics>& arm,
                          double tolerance) {
  LossParity parity;
  const double inf = std::numeric_limits<double>::infinity();
  if (baseline.size() != arm.size()) parity.max_rel_diff = inf;
  for (size_t i = 0; i < baseline.size() && i < arm.size(); ++i) {
    const double a = baseline[i].loss, b = arm[i].loss;
    double diff;
    if (baseline[i].step != arm[i].step || std::isfinite(a) != std::isfinite(b))
      diff = inf;
    else if (!std::isfinite(a))
      diff = 0;  // both diverged at the same step
    else
      diff = std::abs(b - a) / std::max(std::abs(a), std::numeric_limits<double>::min());
    if (diff > parity.max_rel_diff || parity.worst_step == 0) {
      parity.max_rel_diff = std::max(parity.max_rel_diff, diff);
      parity.worst_step = baseline[i].step;
    }
  }
  parity.equivalent = !baseline.empty() && parity.max_rel_diff <= tolerance;
  return parity;
}

}  // namespace ptdp
