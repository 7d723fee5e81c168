#pragma once
// The learning-rate schedule: linear warm-up to optimizer.lr, then decay to optimizer.min_lr.
#include <cstdint>

#include "manifest/run_config.hpp"

namespace ptdp {

// Learning rate of the 0-based optimizer step `step` of a run of `total_steps`.
// Steps 0 .. warmup_steps-1 rise linearly to lr (step i gets lr·(i+1)/warmup_steps); then the
// decay ("cosine", "linear" or "constant") brings it to min_lr at the last step of the decay,
// decay_steps - 1 (total_steps - 1 when decay_steps is 0), and it stays at min_lr after that.
double learning_rate(const RunConfig::Optimizer& optimizer, int64_t step, int64_t total_steps);

}  // namespace ptdp
