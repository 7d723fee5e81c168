#include "one_f_one_b_scheduler.hpp"

#include <algorithm>
#include <string>

namespace ptdp::plugins {

std::vector<ComputeOp> OneFOneBScheduler::stage_ops(const ScheduleShape& shape, int stage) const {
  const int p = shape.stages, m = shape.microbatches;
  if (p < 1 || m < 1 || shape.chunks < 1)
    throw Error("sched-1f1b: p = " + std::to_string(p) + ", v = " + std::to_string(shape.chunks) + ", m = " +
                std::to_string(m) + ": every one must be at least 1");
  if (shape.chunks != 1)
    throw Error("sched-1f1b runs one model chunk per stage, got v = " + std::to_string(shape.chunks) +
                ": set v = 1, or use sched-interleaved for v >= 2");
  if (stage < 0 || stage >= p)
    throw Error("sched-1f1b: stage " + std::to_string(stage) + " is out of range 0.." + std::to_string(p - 1));

  const int warmup = std::min(p - stage - 1, m);
  std::vector<ComputeOp> ops;
  ops.reserve(2 * static_cast<size_t>(m));
  int forwards = 0, backwards = 0;
  while (forwards < warmup) ops.push_back({OpKind::Forward, forwards++, 0});
  while (forwards < m) {
    ops.push_back({OpKind::Forward, forwards++, 0});
    ops.push_back({OpKind::Backward, backwards++, 0});
  }
  while (backwards < m) ops.push_back({OpKind::Backward, backwards++, 0});
  return ops;
}

}  // namespace ptdp::plugins
