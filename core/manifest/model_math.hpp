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

// Whether selective recomputation recomputes the attention's two batched GEMMs (core_attention):
// the other modules it may recompute hold no GEMM.
inline bool recomputes_core_attention(const RunConfig::Parallel& p) {
  if (!p.selective_recompute()) return false;
  for (const std::string& m : p.recompute_modules)
    if (m == "core_attention") return true;
  return false;
}

// With selective recomputation of core_attention the backward runs the attention GEMMs' forward
// (4·b·s²·h a layer) once more: 72·B·s·l·h²·(1 + 2s/(9h) + V/(12·l·h)).
inline double flops_per_step_recomputing_attention(const RunConfig::Model& m, int64_t global_batch) {
  const double B = static_cast<double>(global_batch), s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
  return 72 * B * s * l * h * h * (1 + 2 * s / (9 * h) + V / (12 * l * h));
}

inline double flops_per_step(const RunConfig& c) {
  if (recomputes_core_attention(c.parallel)) return flops_per_step_recomputing_attention(c.model, c.parallel.global_batch);
  return flops_per_step(c.model, c.parallel.global_batch, c.parallel.full_recompute());
}

// Which of the formulas flops_per_step(c) used, for logs and benchmark records.
inline const char* flops_formula_name(const RunConfig& c) {
  if (recomputes_core_attention(c.parallel))
    return "72*B*s*l*h^2*(1 + 2s/(9h) + V/(12*l*h)) (selective recomputation of core_attention)";
  return c.parallel.full_recompute() ? "96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) (full recomputation)"
                                     : "72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) (no recomputation)";
}

}  // namespace ptdp
