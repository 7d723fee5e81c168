#pragma once
// Runs one rank's instruction stream for a step: the compute ops of its model chunks and the
// grouped point-to-point transfers between pipeline neighbours, with the optional
// scatter/gather transfer (each TP rank moves 1/t of the activation; the receiver all-gathers
// over its TP group). Under sequence parallelism each TP rank already holds only its 1/t of the
// activation (its rows of the sequence) and sends it as it is, scatter/gather or not.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/model_chunk.hpp"
#include "runtime/step_context.hpp"
#include "runtime/topology.hpp"
#include "schedule/instruction_stream.hpp"

namespace ptdp {

class PipelineExecutor {
 public:
  PipelineExecutor(LayerKernels& kernels, const ParallelGroups& groups, const Topology& topology,
                   int microbatches, bool scatter_gather,
                   std::vector<std::unique_ptr<ModelChunk>>& chunks_on_rank, const ModelSpec& model,
                   int64_t samples_per_replica, bool mark_first_gradient, bool split_backward = false);

  // Called with (chunk, layer) right after that layer's last backward of the step, when its
  // gradients are final (layers numbered as ModelChunk::parameter_layers numbers them). Under a
  // split backward that is the chunk's last BackwardWeight: every BackwardInput precedes it.
  void on_gradients_final(std::function<void(int chunk, int layer)> fn) { gradients_final_ = std::move(fn); }
  // Called with (chunk, layer) right before each forward of that layer.
  void on_layer_starting(std::function<void(int chunk, int layer)> fn) { layer_starting_ = std::move(fn); }

  // Runs the step's stream; each microbatch of the first and the last stage reads its tokens from
  // the step's batches.
  void run(const StepContext& step);

 private:
  using BufferKey = std::tuple<int, int, int>;  // (payload, microbatch, producing virtual stage)
  // The one place that says which global samples a microbatch holds: each data-parallel
  // replica takes a contiguous share of the global batch, cut into microbatches in slot order.
  MicroBatch microbatch(int64_t step, int slot) const;
  void exchange(const Instruction& instruction);
  void compute(const ComputeOp& op, const StepContext& step);
  int peer_rank(int peer_stage) const;
  int tag(const Transfer& t) const;

  LayerKernels& kernels_;
  const ParallelGroups& groups_;
  const Topology& topology_;
  GridPosition me_;
  int microbatches_;
  bool scatter_gather_;
  std::vector<std::unique_ptr<ModelChunk>>& model_chunks_;
  ModelSpec model_;
  int64_t samples_per_replica_;
  bool mark_first_gradient_;  // sets MicroBatch::first_gradient on each chunk's first backward
  bool split_backward_;       // the blocks' weight gradients come in BackwardWeight, not BackwardInput
  std::function<void(int, int)> gradients_final_;
  std::function<void(int, int)> layer_starting_;
  std::vector<int> backwards_left_;         // per chunk, this step: ops that add weight gradients
  std::vector<bool> gradients_written_;     // per chunk, this step: the blocks' gradients hold a share
  std::map<BufferKey, OwnedTensor> buffers_;           // received inputs and outputs to send
  std::map<int, std::pair<OwnedTensor, OwnedTensor>> tokens_;  // slot -> (tokens, targets) on host
};

}  // namespace ptdp
