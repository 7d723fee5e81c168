#pragma once
// Where a model chunk sits in the pipeline, and the range checks every part of the schedule code
// applies before it trusts a shape or an op. Chunk c of stage s holds virtual stage c·p + s, so
// the virtual stages 0 .. p·v-1 visit the stages round-robin.
#include <cstdint>
#include <vector>

#include "ptdp/scheduler.hpp"

namespace ptdp {

inline int virtual_stage_count(const ScheduleShape& shape) { return shape.stages * shape.chunks; }

// The most model-chunk passes (p·v·m: each microbatch through each virtual stage) a step's
// schedule is built for. Lowering, verifying and simulating hold every op of every stage, about
// 500 bytes per pass: at this bound 150 MB and a fraction of a second, where a global batch of
// 2^30 would take hundreds of GB. Real runs stay far below it (p 64, v 4, m 1024 reach it).
inline constexpr int64_t kMaxSchedulePasses = int64_t{1} << 18;
inline int64_t schedule_passes(int64_t stages, int64_t chunks, int64_t microbatches) {
  return stages * chunks * microbatches;
}
inline int virtual_stage_of(const ScheduleShape& shape, int stage, int chunk) {
  return chunk * shape.stages + stage;
}
inline int stage_of_virtual_stage(const ScheduleShape& shape, int virtual_stage) {
  return virtual_stage % shape.stages;
}

// Throws ScheduleError unless p, v and m are all at least 1 and p·v·m is at most kMaxSchedulePasses.
void check_schedule_shape(const ScheduleShape& shape);

// Throws ScheduleError unless there is one op list per stage and every op's microbatch and chunk
// are in range; the message names the stage, the op's position and the value.
void check_ops_in_range(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage);

}  // namespace ptdp
