#pragma once
// One global batch's pass through this rank's part of the pipeline, as the trainer hands it to
// the executor: a training step, or a forward-only batch of validation or eval.
#include <cstdint>

#include <ptdp/layer_kernels.hpp>

#include "data/batch_sampler.hpp"
#include "runtime/timeline_recorder.hpp"
#include "schedule/instruction_stream.hpp"

namespace ptdp {

struct StepContext {
  int64_t step;                     // the training step (0-based), or the index of a validation or eval batch
  const InstructionStream& stream;  // this stage's instructions: the training schedule or forward only
  const BatchSampler& batches;      // the tokens of the first stage and the targets of the last
  Tensor losses;                    // F32 [m] on the device: the head's chunk writes microbatch i's loss to element i
  float loss_scale;                 // multiplies the loss before backward (1/(m·d); S/(m·d) under fp16)
  bool training;                    // dropout, and activations kept for the backward
  TimelineRecorder& timeline;
};

}  // namespace ptdp
