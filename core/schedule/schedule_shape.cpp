#include "schedule/schedule_shape.hpp"

#include <string>

#include "schedule/op_kinds.hpp"
#include "schedule/op_label.hpp"
#include "schedule/schedule_error.hpp"

namespace ptdp {

void check_schedule_shape(const ScheduleShape& shape) {
  if (shape.stages < 1 || shape.chunks < 1 || shape.microbatches < 1)
    throw ScheduleError("schedule shape p=" + std::to_string(shape.stages) + " v=" +
                        std::to_string(shape.chunks) + " m=" + std::to_string(shape.microbatches) +
                        ": stages, chunks and microbatches must all be at least 1");
  const int64_t passes = schedule_passes(shape.stages, shape.chunks, shape.microbatches);
  if (passes > kMaxSchedulePasses)
    throw ScheduleError("schedule shape p=" + std::to_string(shape.stages) + " v=" + std::to_string(shape.chunks) +
                        " m=" + std::to_string(shape.microbatches) + ": p*v*m = " + std::to_string(passes) +
                        " microbatch passes a step, more than the " + std::to_string(kMaxSchedulePasses) +
                        " a schedule is built for; use fewer microbatches");
}

void check_ops_in_range(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage) {
  check_schedule_shape(shape);
  if (static_cast<int>(ops_per_stage.size()) != shape.stages)
    throw ScheduleError("schedule has op lists for " + std::to_string(ops_per_stage.size()) +
                        " stages, expected p = " + std::to_string(shape.stages));
  for (int stage = 0; stage < shape.stages; ++stage) {
    const auto& ops = ops_per_stage[stage];
    for (size_t i = 0; i < ops.size(); ++i) {
      const ComputeOp& op = ops[i];
      std::string where = "stage " + std::to_string(stage) + ", op " + std::to_string(i);
      if (!is_known_op_kind(op.kind))
        throw ScheduleError(where + ": unknown op kind " + std::to_string(static_cast<int>(op.kind)));
      where += std::string(" (") + op_kind_name(op.kind) + "): ";
      if (op.microbatch < 0 || op.microbatch >= shape.microbatches)
        throw ScheduleError(where + "microbatch " + std::to_string(op.microbatch) +
                            " is out of range 0.." + std::to_string(shape.microbatches - 1));
      if (op.chunk < 0 || op.chunk >= shape.chunks)
        throw ScheduleError(where + "chunk " + std::to_string(op.chunk) + " is out of range 0.." +
                            std::to_string(shape.chunks - 1));
    }
  }
}

}  // namespace ptdp
