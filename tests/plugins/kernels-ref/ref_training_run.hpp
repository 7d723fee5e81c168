#pragma once
// Trains the GPT-2 of a ModelSpec on kernels-ref over a tensor-parallel group of threads, and
// returns what the tests compare between layouts and with the PyTorch oracle.
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "support/gpt_fixtures.hpp"
#include "support/shard.hpp"

namespace ptdp::test {

struct TrainingPlan {
  int tp = 1;
  bool null_communicator_for_tp1 = false;  // bind with tp = nullptr when tp == 1
  AdamStep adam;  // `step` is set per step
  // batches[step][microbatch]; the step's loss is the mean over its microbatches.
  std::vector<std::vector<TokenBatch>> batches;
};

struct TrainingResult {
  std::vector<std::vector<float>> losses;  // [step][microbatch]
  TensorMap first_grads;                   // gradients of the first step, before Adam
  TensorMap final_weights;                 // after the last step's Adam update
};

TrainingResult train(const ModelSpec& model, const TensorMap& initial, const TrainingPlan& plan);

// The parameters of the model as one rank holds them (names and global shapes only matter).
std::vector<ParamRef> global_parameters(const ModelSpec& model);

// ||a - b|| / ||b||, in double.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ptdp::test
