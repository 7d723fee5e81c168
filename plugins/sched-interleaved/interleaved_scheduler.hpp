#pragma once
// The paper's interleaved 1F1B schedule (Megatron-LM's): each stage holds v model chunks, chunk c
// of stage s being virtual stage c·p + s. Microbatches go through the chunks in groups of p
// (microbatches 0..p-1 through chunk 0, then through chunk 1, ..., then the next group), and the
// backwards visit the chunks in reverse. Stage s runs (p - s - 1)·2 + (v - 1)·p warm-up forwards
// (at most m·v), then alternates one forward and one backward, then runs the remaining backwards.
// When m == p every stage runs all its forwards first, as Megatron-LM does: the interleaved
// warm-up already fills stage 0 completely, and the other stages then keep the (p - 1)/(v·m)
// bubble of the paper under the blocking transfers the core lowers the schedule to.
#include <vector>

#include <ptdp/plugin.hpp>
#include <ptdp/scheduler.hpp>

namespace ptdp::plugins {

class InterleavedScheduler final : public Scheduler {
 public:
  InterleavedScheduler() = default;
  explicit InterleavedScheduler(const PluginContext&) {}

  // Refuses v < 2 (use sched-1f1b), m not a multiple of p, and shapes or stages out of range,
  // each with what to change.
  std::vector<ComputeOp> stage_ops(const ScheduleShape& shape, int stage) const override;
};

}  // namespace ptdp::plugins
