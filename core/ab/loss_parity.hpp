#pragma once
// Whether two arms trained the same model: their per-step losses side by side.
#include <cstdint>
#include <vector>

#include "metrics/step_metrics.hpp"

namespace ptdp {

struct LossParity {
  double max_rel_diff = 0;  // max over steps of |arm - baseline| / |baseline|; inf when a loss
                            // is finite in one arm only or the arms logged different steps
  int64_t worst_step = 0;   // the step where it is largest (0 when there are no steps)
  double mean_rel_diff = 0;  // the mean over steps of the same
  double last_rel_diff = 0;  // at the last step both logged
  bool equivalent = false;  // max_rel_diff <= tolerance
};

// Every logged step counts, warm-up steps included: losses do not depend on timing.
LossParity compare_losses(const std::vector<StepMetrics>& baseline, const std::vector<StepMetrics>& arm,
                          double tolerance);

}  // namespace ptdp
