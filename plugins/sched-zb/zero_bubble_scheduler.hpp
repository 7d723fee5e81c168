#pragma once
// ZB-H1, the zero-bubble paper's schedule that keeps 1F1B's peak activations (Qi et al., "Zero
// Bubble Pipeline Parallelism", ICLR 2024): 1F1B's order with each backward split into B (the
// input gradient, BackwardInput) and W (the weight gradients, BackwardWeight). Stage s runs
// 1F1B's min(p - s - 1, m) warm-up forwards, then F and B alternately, and runs each W s
// microbatches after its B; the s W's left at the end run after the last B. B goes back through
// the pipeline without waiting for any W, and a stage's late W's fill the time it would wait at
// the end. At most p microbatches keep activations on any stage (a W's inputs count until it
// runs): 1F1B's peak, that of its first stage.
#include <vector>

#include <ptdp/plugin.hpp>
#include <ptdp/scheduler.hpp>

namespace ptdp::plugins {

class ZeroBubbleScheduler final : public Scheduler {
 public:
  ZeroBubbleScheduler() = default;
  explicit ZeroBubbleScheduler(const PluginContext&) {}

  // Refuses v != 1 and shapes or stages out of range, each saying what to change.
  std::vector<ComputeOp> stage_ops(const ScheduleShape& shape, int stage) const override;
};

}  // namespace ptdp::plugins
