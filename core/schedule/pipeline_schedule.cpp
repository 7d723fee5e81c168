#include "schedule/pipeline_schedule.hpp"

#include "schedule/schedule_shape.hpp"

namespace ptdp {

std::vector<std::vector<ComputeOp>> collect_schedule(const Scheduler& scheduler, const ScheduleShape& shape) {
  check_schedule_shape(shape);
  std::vector<std::vector<ComputeOp>> ops;
  ops.reserve(shape.stages);
  for (int stage = 0; stage < shape.stages; ++stage) ops.push_back(scheduler.stage_ops(shape, stage));
  return ops;
}

PipelineSchedule plan_schedule(const Scheduler& scheduler, const ScheduleShape& shape) {
  PipelineSchedule plan;
  plan.shape = shape;
  plan.ops = collect_schedule(scheduler, shape);
  plan.streams = lower_schedule(shape, plan.ops);
  plan.report = verify_schedule(shape, plan.ops, plan.streams);
  return plan;
}

}  // namespace ptdp
