#pragma once
// The checks every schedule passes before anything executes, whatever scheduler plugin made it:
// the ops cover the work exactly once and in order, the streams carry exactly the transfers the
// ops need, and all stages' streams run to the end together under the execution model of
// instruction_stream.hpp. A failure throws ScheduleError naming the stage, the op and the reason.
#include <vector>

#include "schedule/instruction_stream.hpp"

namespace ptdp {

struct ScheduleReport {
  // Per stage, the most (microbatch, chunk) activation sets alive at once: a Forward's saved
  // activations live until its Backward, or under a split backward until its BackwardWeight
  // (what the weight gradients read: the inputs of the layers and their output gradients). With one chunk per stage this counts microbatches; with
  // v chunks each set is a chunk's, 1/v of a whole stage's.
  std::vector<int> peak_activations;
};

// Every (microbatch, chunk) has exactly one Forward on each stage and, after it, either one
// Backward or one BackwardInput and, after that, one BackwardWeight.
void check_schedule_ops(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage);

// Peak activations per stage of ops that passed check_schedule_ops().
std::vector<int> peak_activations(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage);

// check_schedule_ops(), then for each stage's stream: it runs exactly the stage's ops in order,
// every op's input has arrived (received, or made on the same stage) before it runs, every result
// another stage consumes is sent once after it is made, every transfer names the right peer; then
// the streams are replayed against each other: no deadlock, and the k-th send from a stage to
// another is the buffer the k-th receive there expects.
ScheduleReport verify_schedule(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage,
                               const std::vector<InstructionStream>& streams);

}  // namespace ptdp
