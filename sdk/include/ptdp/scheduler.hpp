#pragma once
// Scheduler: the order of compute ops one pipeline stage runs in a training step. It says
// nothing about communication; the core lowers these ops into instruction streams with a fixed,
// verified communication policy and verifies every schedule before anything executes.
#include <cstdint>
#include <string>
#include <vector>

namespace ptdp {

// Backward is a microbatch's whole backward through a chunk. Since ABI 1.9 a scheduler may split
// it, as zero-bubble schedules do, into BackwardInput (the gradient of the chunk's input, which
// the previous stage waits for) and BackwardWeight (the gradients of its weights, which nobody
// waits for): then each (microbatch, chunk) has one BackwardInput and, later on the same stage,
// one BackwardWeight instead of a Backward. The activations a microbatch keeps count as alive
// until its BackwardWeight. A kernels plugin that does not split its backward runs the whole
// backward at the BackwardInput and nothing at the BackwardWeight (LayerKernels::splits_backward).
enum class OpKind : uint8_t { Forward, Backward, BackwardInput, BackwardWeight };

struct ComputeOp {
  OpKind kind;
  int microbatch;  // 0 .. microbatches-1
  int chunk;       // model chunk on this stage, 0 .. chunks-1; virtual stage = chunk*stages + stage
  bool operator==(const ComputeOp& o) const {
    return kind == o.kind && microbatch == o.microbatch && chunk == o.chunk;
  }
};

struct ScheduleShape {
  int stages = 1;        // p
  int chunks = 1;        // v, model chunks per stage
  int microbatches = 1;  // m, per pipeline per step
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The ops of `stage` (0-based) in execution order. Throws ptdp::Error with a message that says
  // what to change when the shape cannot be served (e.g. "m % p != 0: use m = 8 or 12").
  virtual std::vector<ComputeOp> stage_ops(const ScheduleShape& shape, int stage) const = 0;
};

}  // namespace ptdp
