#pragma once
// The forward-only schedule of validation and eval: no backward, so no scheduler plugin is asked.
// Every stage walks the (microbatch, chunk) pairs in one global order, microbatch-major, so each
// blocking transfer meets its partner at the same point of that order.
#include <vector>

#include "schedule/instruction_stream.hpp"

namespace ptdp {

InstructionStream forward_only_stream(const ScheduleShape& shape, int stage);

// Every stage's stream, replayed against each other as the training schedule is: throws
// ScheduleError naming the first stage that would not finish.
std::vector<InstructionStream> verified_forward_only_streams(const ScheduleShape& shape);

}  // namespace ptdp
