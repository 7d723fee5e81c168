#pragma once
// Where a model chunk sits in the pipeline, and the range checks every part of the schedule code
// applies before it trusts a shape or an op. Chunk c of stage s holds virtual stage c·p + s, so
// the virtual stages 0 .. p·v-1 visit the stages round-robin.
#include <vector>

#include "ptdp/scheduler.hpp"

namespace ptdp {

inline int virtual_stage_count(const ScheduleShape& shape) { return shape.stages * shape.chunks; }
inline int virtual_stage_of(const ScheduleShape& shape, int stage, int chunk) {
  return chunk * shape.stages + stage;
}
inline int stage_of_virtual_stage(const ScheduleShape& shape, int virtual_stage) {
  return virtual_stage % shape.stages;
}

// Throws ScheduleError unless p, v and m are all at least 1.
void check_schedule_shape(const ScheduleShape& shape);

// Throws ScheduleError unless there is one op list per stage and every op's microbatch and chunk
// are in range; the message names the stage, the op's position and the value.
void check_ops_in_range(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage);

}  // namespace ptdp
