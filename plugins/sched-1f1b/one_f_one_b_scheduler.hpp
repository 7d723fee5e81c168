#pragma once
// PipeDream-Flush 1F1B, the paper's default schedule: stage s runs min(p - s - 1, m) warm-up
// forwards, then alternates one forward and one backward, then runs the remaining backwards.
// At most p - s microbatches keep activations on stage s; the bubble is (p - 1) / m.
#include <vector>

#include <ptdp/plugin.hpp>
#include <ptdp/scheduler.hpp>

namespace ptdp::plugins {

class OneFOneBScheduler final : public Scheduler {
 public:
  OneFOneBScheduler() = default;
  explicit OneFOneBScheduler(const PluginContext&) {}

  // Refuses v != 1 (that is sched-interleaved's job) and shapes or stages out of range.
  std::vector<ComputeOp> stage_ops(const ScheduleShape& shape, int stage) const override;
};

}  // namespace ptdp::plugins
