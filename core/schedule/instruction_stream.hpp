#pragma once
// InstructionStream: what one pipeline stage executes in a training step, in order. The
// scheduler plugin decides the order of compute ops; lower_schedule() adds the point-to-point
// transfers between stages with one fixed communication policy, and verify_schedule() proves the
// streams of all stages run to the end together before anything executes.
//
// Execution model (the verifier and simulator assume it; the executor keeps it or, posting the
// groups ahead, only drops waits from it: pipeline_executor.hpp):
// - Compute runs op.kind on op.microbatch through model chunk op.chunk (virtual stage
//   op.chunk·p + stage).
// - Exchange is one group of sends and receives, posted together (group_start .. group_end). It
//   completes only when every transfer in it has been matched by the peer's posted group; the
//   stage does nothing else meanwhile.
// - Transfers between two stages match in posting order (no tags, like NCCL): the k-th send from
//   A to B meets the k-th receive at B from A, and both describe the same buffer.
// - A buffer that stays on its stage (p = 1 with several chunks, or the last virtual stage's
//   forward output feeding its own backward) is never a transfer: the executor keeps every
//   Forward output and Backward input-gradient by (microbatch, virtual stage) and hands it to the
//   consuming op locally.
//
// Communication policy (Megatron-LM's). A stage's ops are cut into units. With one chunk per
// stage every op is a unit. With v > 1 a Forward followed by a Backward form one unit, the
// interleaved schedule's 1F1B pair, unless that Backward's input can only exist after that
// Forward ran (through any stage's order): such a pair would wait for itself. Before the first
// unit one group receives the unit's inputs; after each unit one group sends the unit's results
// (in op order) and receives the next unit's inputs (in op order). A BackwardWeight is a unit
// with no transfers, skipped in that choice: the group after the op before it receives the inputs
// of the first unit after it that needs any. Groups with nothing in them are left out. A
// BackwardInput is lowered as a Backward is (it sends the same input gradient).
// Why pairs with v > 1: neighbouring stages are two ops apart in the interleaved warm-up, so with
// one exchange per op a stage would sit in a send of a Backward's gradient while its neighbour
// sits in a send of its own Backward's gradient, each waiting for the other's receive; exchanging
// after each F+B pair keeps both ends of every transfer in matching groups. With v = 1
// neighbours are one op apart and an exchange after every op keeps them in step; pairing there
// would hold each activation back by a backward and widen the bubble.
#include <cstdint>
#include <string>
#include <vector>

#include "ptdp/scheduler.hpp"

namespace ptdp {

struct Transfer {
  enum class Direction : uint8_t { Send, Recv };
  enum class Payload : uint8_t { Activation, Gradient };

  Direction direction = Direction::Send;
  // Activation: the output of Forward(microbatch) on source_virtual_stage, the input of the
  // Forward on source_virtual_stage + 1. Gradient: the gradient of the loss with respect to the
  // input of source_virtual_stage, computed by its Backward(microbatch), the output gradient of
  // the Backward on source_virtual_stage - 1.
  Payload payload = Payload::Activation;
  int microbatch = 0;
  int source_virtual_stage = 0;
  int peer_stage = 0;  // the pipeline stage at the other end (rank within the pipeline group)

  // The virtual stage whose op consumes the buffer.
  int target_virtual_stage() const {
    return payload == Payload::Activation ? source_virtual_stage + 1 : source_virtual_stage - 1;
  }
  // Both ends of one transfer carry the same buffer identity.
  bool same_buffer(const Transfer& other) const {
    return payload == other.payload && microbatch == other.microbatch &&
           source_virtual_stage == other.source_virtual_stage;
  }
  bool operator==(const Transfer& other) const = default;
};

struct Instruction {
  enum class Kind : uint8_t { Compute, Exchange };
  Kind kind = Kind::Compute;
  ComputeOp op{OpKind::Forward, 0, 0};  // Compute only
  std::vector<Transfer> transfers;      // Exchange only: one group
};

using InstructionStream = std::vector<Instruction>;

// "activation of microbatch 3 from virtual stage 4", for messages.
std::string buffer_label(const Transfer& transfer);

// The streams of all p stages for the scheduler's ops (one list per stage, execution order).
// Throws ScheduleError if the shape or an op is out of range; anything else (missing or repeated
// ops, orders that deadlock) is lowered as given and left to verify_schedule().
std::vector<InstructionStream> lower_schedule(const ScheduleShape& shape,
                                              const std::vector<std::vector<ComputeOp>>& ops_per_stage);

}  // namespace ptdp
