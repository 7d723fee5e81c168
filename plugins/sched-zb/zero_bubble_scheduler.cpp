#include "zero_bubble_scheduler.hpp"

#include <algorithm>
#include <deque>
#include <string>

namespace ptdp::plugins {

ZeroBubbleScheduler::ZeroBubbleScheduler(const PluginContext& context) : variant_(ZeroBubbleVariant::H1) {
  if (context.config != nullptr && context.config->get_string("schedule") == "zb-h2") variant_ = ZeroBubbleVariant::H2;
}

std::vector<ComputeOp> ZeroBubbleScheduler::stage_ops(const ScheduleShape& shape, int stage) const {
  const int p = shape.stages, m = shape.microbatches;
  if (p < 1 || m < 1 || shape.chunks < 1)
    throw Error("sched-zb: p = " + std::to_string(p) + ", v = " + std::to_string(shape.chunks) + ", m = " +
                std::to_string(m) + ": every one must be at least 1");
  if (shape.chunks != 1)
    throw Error("sched-zb runs one model chunk per stage, got v = " + std::to_string(shape.chunks) +
                ": set parallel.virtual_stages = 1, or use sched-interleaved for v >= 2");
  if (stage < 0 || stage >= p)
    throw Error("sched-zb: stage " + std::to_string(stage) + " is out of range 0.." + std::to_string(p - 1));

  // The two variants differ only in how far forwards run ahead and how long W's wait.
  const bool h2 = variant_ == ZeroBubbleVariant::H2;
  const int warmup = std::min((h2 ? 2 : 1) * (p - stage - 1), m);
  const size_t weights_held = static_cast<size_t>((h2 ? 2 : 1) * stage);
  std::vector<ComputeOp> ops;
  ops.reserve(3 * static_cast<size_t>(m));
  std::deque<int> weights_due;  // microbatches whose B ran and whose W has not
  int forwards = 0, backwards = 0;
  auto backward = [&] {
    ops.push_back({OpKind::BackwardInput, backwards, 0});
    weights_due.push_back(backwards++);
    if (weights_due.size() > weights_held) {
      ops.push_back({OpKind::BackwardWeight, weights_due.front(), 0});
      weights_due.pop_front();
    }
  };
  while (forwards < warmup) ops.push_back({OpKind::Forward, forwards++, 0});
  while (forwards < m) {
    ops.push_back({OpKind::Forward, forwards++, 0});
    backward();
  }
  while (backwards < m) backward();
  for (int mb : weights_due) ops.push_back({OpKind::BackwardWeight, mb, 0});
  return ops;
}

}  // namespace ptdp::plugins
