#pragma once
// Model FLOPs of one training step (DESIGN.md §1, the paper's Eq. 3), the number TFLOP/s per GPU
// is reported from. Only the GEMMs and attention count, as in the paper.
#include "manifest/run_config.hpp"

namespace ptdp {

// With parallel.recompute == "full":  96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h));
// without recomputation:              72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
// V is the padded vocabulary, the width the logits GEMM really has. For an MLP wider or narrower
// than 4h the same count is made with ffn_hidden in place of 4h.
double flops_per_step(const RunConfig& config);

// Which of the formulas above flops_per_step used, for logs and benchmark records.
const char* flops_formula_name(const RunConfig& config);

}  // namespace ptdp
