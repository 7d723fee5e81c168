#pragma once
// The zero-bubble paper's handcrafted schedules (Qi et al., "Zero Bubble Pipeline Parallelism",
// ICLR 2024): 1F1B's order with each backward split into B (the input gradient, BackwardInput)
// and W (the weight gradients, BackwardWeight). B goes back through the pipeline without waiting
// for any W, and the W's a stage holds back fill the time it would otherwise wait.
//
// ZB-H1 keeps 1F1B's peak activations: stage s runs 1F1B's min(p - s - 1, m) warm-up forwards,
// then F and B alternately, and each W s microbatches after its B; the s W's still due close the
// stage's list. At most p microbatches keep activations on any stage (a W's inputs count until
// it runs), 1F1B's peak, that of its first stage. Bubble (p - 1)·(T_F + T_B - T_W).
//
// ZB-H2 spends memory on the warm-up: stage s runs min(2·(p - s - 1), m) warm-up forwards, so the
// first stage never waits for its first B, and runs each W 2·s microbatches after its B. Peak
// activations 2p - 1 on the first stage. Every stage is busy from its first op to its last when
// T_F = T_B = T_W (the span's idle is (p - 1)·(T_F + T_B - 2·T_W)); the step's own makespan still
// has the (p - 1)·T_F it takes the first microbatch to reach the last stage.
#include <vector>

#include <ptdp/plugin.hpp>
#include <ptdp/scheduler.hpp>

namespace ptdp::plugins {

enum class ZeroBubbleVariant { H1, H2 };

class ZeroBubbleScheduler final : public Scheduler {
 public:
  explicit ZeroBubbleScheduler(ZeroBubbleVariant variant = ZeroBubbleVariant::H1) : variant_(variant) {}
  // Reads `schedule` ("zb-h1" or "zb-h2") from the validated configuration.
  explicit ZeroBubbleScheduler(const PluginContext& context);

  // Refuses v != 1 and shapes or stages out of range, each saying what to change.
  std::vector<ComputeOp> stage_ops(const ScheduleShape& shape, int stage) const override;

 private:
  ZeroBubbleVariant variant_;
};

}  // namespace ptdp::plugins
