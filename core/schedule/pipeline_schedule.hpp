#pragma once
// A scheduler plugin's step, ready to execute: its ops for every stage, lowered to instruction
// streams and verified. The runtime calls plan_schedule() once per run and executes
// streams[its stage]; tools call the parts.
#include <vector>

#include "ptdp/scheduler.hpp"
#include "schedule/instruction_stream.hpp"
#include "schedule/schedule_verifier.hpp"

namespace ptdp {

struct PipelineSchedule {
  ScheduleShape shape;
  std::vector<std::vector<ComputeOp>> ops;  // per stage, as the scheduler ordered them
  std::vector<InstructionStream> streams;   // per stage
  ScheduleReport report;
};

// scheduler.stage_ops() for stages 0 .. p-1. Throws ScheduleError for a shape below 1 in any
// dimension; the scheduler's own refusal (ptdp::Error, saying what to change) passes unchanged.
std::vector<std::vector<ComputeOp>> collect_schedule(const Scheduler& scheduler, const ScheduleShape& shape);

// collect_schedule(), lower_schedule(), verify_schedule(): throws on the first problem.
PipelineSchedule plan_schedule(const Scheduler& scheduler, const ScheduleShape& shape);

}  // namespace ptdp
