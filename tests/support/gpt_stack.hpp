#pragma once
// One tensor-parallel rank's whole GPT-2 (embedding, every block, head tied to the embedding)
// on a bound LayerKernels backend, driven per microbatch the way a single pipeline stage is.
// It touches the backend only through the SDK interface, so it serves any backend.
#include <map>
#include <memory>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "support/gpt_fixtures.hpp"
#include "support/shard.hpp"

namespace ptdp::test {

class GptStack {
 public:
  // activation_rows: the rows of the sequence an activation between layers holds (s/t under
  // sequence parallelism); 0 for all of them.
  GptStack(LayerKernels& kernels, const ModelSpec& model, int64_t activation_rows = 0);

  // Every learnable tensor once (the tied word matrix is listed by the embedding).
  const std::vector<ParamRef>& parameters() const { return params_; }
  // Sets every master from the global tensors, sliced by each ParamRef.
  void load(const TensorMap& global);
  std::vector<LocalTensor> masters() const;
  std::vector<LocalTensor> grads() const;
  void zero_grads();
  // What the core leaves for kernels that write their blocks' gradients on the step's first
  // backward (MicroBatch::first_gradient): every block gradient set to `stale`, the embedding's
  // and head's zeroed.
  void stale_block_grads(float stale);

  // Forward of one microbatch; returns its loss. With `recompute` the embedding and the blocks
  // keep nothing (save=false) and run again, saving, right before this microbatch's backward.
  float forward(const MicroBatch& mb, const TokenBatch& batch, bool recompute = false);
  // With `split_blocks` the blocks run only backward_input; backward_weight adds their parameter
  // gradients later, as a zero-bubble schedule's W does.
  void backward(const MicroBatch& mb, float loss_scale, bool split_blocks = false);
  void backward_weight(const MicroBatch& mb);
  void adam_step(const AdamStep& step);

 private:
  // Embedding and blocks; returns the buffer holding the last block's output.
  const Tensor& run_trunk(const MicroBatch& mb, const TokenBatch& batch, bool save);
  std::vector<LocalTensor> snapshot(bool grads) const;

  LayerKernels& kernels_;
  ModelSpec model_;
  std::shared_ptr<EmbeddingLayer> embedding_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  std::shared_ptr<HeadLayer> head_;
  std::vector<ParamRef> params_;
  OwnedTensor activations_[2], gradients_[2], loss_;
  std::map<int, TokenBatch> to_recompute_;  // by slot
};

}  // namespace ptdp::test
