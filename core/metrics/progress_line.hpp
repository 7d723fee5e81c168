#pragma once
// The one-line progress report printed while training, e.g.
//   step 12/40 | loss 3.2104 | lr 9.6e-04 | grad 0.84 | 10.2k tok/s | 12.3 GFLOP/s/rank | 00:14 elapsed, ETA 00:33
// with "| val 3.1877" after the loss on steps that ran a validation pass, and under fp16
// "| loss scale 32768, 2 skipped" after the gradient norm ("32768 (skipped), 3 skipped" on a step
// whose gradients overflowed). The throughput is in TFLOP/s from 1 TFLOP/s on, in GFLOP/s or
// MFLOP/s below.
#include <cstdint>
#include <string>

#include "metrics/step_metrics.hpp"

namespace ptdp {

// elapsed_s: wall time since training started; the ETA assumes the remaining steps run at the
// average pace so far.
std::string progress_line(const StepMetrics& metrics, int64_t total_steps, double elapsed_s);

// mm:ss, or h:mm:ss from an hour on; "--:--" for a time not known yet.
std::string clock_time(double seconds);

}  // namespace ptdp
