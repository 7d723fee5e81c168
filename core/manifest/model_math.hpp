#pragma once
// The paper's arithmetic on a RunConfig (docs/architecture.md §1), shared by `validate`, the planner and the
// throughput report.
#include <cstdint>

#include "manifest/run_config.hpp"

namespace ptdp {

// P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)), the paper's parameter count, multiplied out to
// 12·l·h² + 13·l·h + (V+s)·h so it stays exact. V is model.vocab as written (the paper's V).
inline int64_t parameter_count(const RunConfig::Model& m) {
  const int64_t l = m.layers, h = m.hidden, V = m.vocab, s = m.seq_len;
  return 12 * l * h * h + 13 * l * h + (V + s) * h;
}

// FLOPs of one training step of B sequences (the paper's Eq. 3). With full recomputation:
// 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)); without: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
inline double flops_per_step(const RunConfig::Model& m, int64_t global_batch, bool recompute) {
  const double B = static_cast<double>(global_batch), s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
  const double base = B * s * l * h * h;
  return recompute ? 96 * base * (1 + s / (6 * h) + V / (16 * l * h))
                   : 72 * base * (1 + s / (6 * h) + V / (12 * l * h));
}

inline double flops_per_step(const RunConfig& c) {
  return flops_per_step(c.model, c.parallel.global_batch, c.parallel.recompute == "full");
}

// Which of the two formulas flops_per_step(c) used, for logs and benchmark records.
inline const char* flops_formula_name(const RunConfig& c) {
  return c.parallel.recompute == "full" ? "96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) (full recomputation)"
                                        : "72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) (no recomputation)";
}

}  // namespace ptdp
