#include "interleaved_scheduler.hpp"

#include <algorithm>
#include <string>

namespace ptdp::plugins {
namespace {

// The k-th forward (or backward) of any stage: the microbatch and the chunk it runs.
ComputeOp kth_op(const ScheduleShape& shape, int k, OpKind kind) {
  const int p = shape.stages, v = shape.chunks;
  const int group = k / (p * v), in_group = k % (p * v);
  int chunk = in_group / p;
  if (kind == OpKind::Backward) chunk = v - 1 - chunk;
  return ComputeOp{kind, group * p + in_group % p, chunk};
}

}  // namespace

std::vector<ComputeOp> InterleavedScheduler::stage_ops(const ScheduleShape& shape, int stage) const {
  const int p = shape.stages, v = shape.chunks, m = shape.microbatches;
  if (p < 1 || v < 1 || m < 1)
    throw Error("sched-interleaved: p = " + std::to_string(p) + ", v = " + std::to_string(v) + ", m = " +
                std::to_string(m) + ": every one must be at least 1");
  if (v < 2)
    throw Error("sched-interleaved needs at least 2 model chunks per stage, got v = " + std::to_string(v) +
                ": set v >= 2, or use sched-1f1b for v = 1");
  if (m % p != 0) {
    const int below = m / p * p, above = below + p;
    throw Error("sched-interleaved needs m to be a multiple of p (m % p == 0), got m = " + std::to_string(m) +
                ", p = " + std::to_string(p) + ": use m = " +
                (below > 0 ? std::to_string(below) + " or m = " : std::string()) + std::to_string(above));
  }
  if (stage < 0 || stage >= p)
    throw Error("sched-interleaved: stage " + std::to_string(stage) + " is out of range 0.." + std::to_string(p - 1));

  const int total = m * v;
  const int warmup = m == p ? total : std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  std::vector<ComputeOp> ops;
  ops.reserve(2 * static_cast<size_t>(total));
  int forwards = 0, backwards = 0;
  while (forwards < warmup) ops.push_back(kth_op(shape, forwards++, OpKind::Forward));
  while (forwards < total) {
    ops.push_back(kth_op(shape, forwards++, OpKind::Forward));
    ops.push_back(kth_op(shape, backwards++, OpKind::Backward));
  }
  while (backwards < total) ops.push_back(kth_op(shape, backwards++, OpKind::Backward));
  return ops;
}

}  // namespace ptdp::plugins
