#pragma once
// Schedules written out here, independent of the scheduler plugins, for the core's own tests.
#include <algorithm>
#include <vector>

#include "ptdp/scheduler.hpp"

namespace ptdp::testing {

using StageOps = std::vector<std::vector<ComputeOp>>;

inline ComputeOp F(int microbatch, int chunk = 0) { return {OpKind::Forward, microbatch, chunk}; }
inline ComputeOp B(int microbatch, int chunk = 0) { return {OpKind::Backward, microbatch, chunk}; }

// Hands out fixed op lists.
class ListScheduler final : public Scheduler {
 public:
  explicit ListScheduler(StageOps ops) : ops_(std::move(ops)) {}
  std::vector<ComputeOp> stage_ops(const ScheduleShape&, int stage) const override { return ops_.at(stage); }

 private:
  StageOps ops_;
};

// All forwards, then all backwards in reverse.
inline StageOps gpipe_ops(int p, int m) {
  StageOps ops(p);
  for (auto& stage : ops) {
    for (int mb = 0; mb < m; ++mb) stage.push_back(F(mb));
    for (int mb = m - 1; mb >= 0; --mb) stage.push_back(B(mb));
  }
  return ops;
}

// min(p - s - 1, m) forwards, then F/B alternating, then the remaining backwards.
inline StageOps one_f_one_b_ops(int p, int m) {
  StageOps ops(p);
  for (int s = 0; s < p; ++s) {
    int f = 0, b = 0;
    for (; f < std::min(p - s - 1, m); ++f) ops[s].push_back(F(f));
    for (; f < m; ++f, ++b) {
      ops[s].push_back(F(f));
      ops[s].push_back(B(b));
    }
    for (; b < m; ++b) ops[s].push_back(B(b));
  }
  return ops;
}

}  // namespace ptdp::testing
