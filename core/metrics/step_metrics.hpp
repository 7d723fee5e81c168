#pragma once
// What one optimizer step reports.
#include <cstdint>
#include <optional>

namespace ptdp {

struct StepMetrics {
  int64_t step = 0;             // optimizer steps completed, counting this one (1-based)
  double loss = 0.0;            // mean training loss over the step's global batch
  double grad_norm = 0.0;       // global gradient norm, before clipping
  double lr = 0.0;              // learning rate the step used
  double tokens_per_s = 0.0;    // global-batch tokens / step time
  double tflops_per_gpu = 0.0;  // flops_per_step / step time / world size, in TFLOP/s
  double step_time_s = 0.0;
  double elapsed_s = 0.0;       // wall time since training started
  std::optional<double> val_loss;  // when the step ran a validation pass
  // precision.params = "fp16" only (docs/precision.md):
  std::optional<double> loss_scale;  // the loss scale this step's gradients were computed with
  bool skipped = false;              // they overflowed: the step updated nothing
  int64_t steps_skipped = 0;         // steps skipped so far, this one included (resumed runs count on)
};

}  // namespace ptdp
