#pragma once
// Scheduler: the order of compute ops one pipeline stage runs in a training step. It says
// nothing about communication; the core lowers these ops into instruction streams with a fixed,
// verified communication policy and verifies every schedule before anything executes.
#include <string>
#include <vector>

namespace ptdp {

enum class OpKind : uint8_t { Forward, Backward };

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
