#pragma once
// A model chunk: the layers of one virtual stage on this rank (embedding and/or head at the
// ends of the model), run forward and backward per microbatch. With full recomputation the
// blocks are cut into segments of `recompute_every` layers: forward keeps only each segment's
// input, backward re-runs the segment's forward before its backward (the paper's
// activation checkpointing). The embedding and head always keep their activations.
#include <functional>
#include <map>
#include <utility>
#include <memory>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/model_partition.hpp"

namespace ptdp {

struct MicrobatchTokens {
  const Tensor* tokens = nullptr;   // I32 [s, b] host, for a chunk with the embedding
  const Tensor* targets = nullptr;  // I32 [s, b] host, for a chunk with the head
};

class ModelChunk {
 public:
  // tied_embedding: the embedding layer on this rank the head shares its word matrix with
  // (p == 1), or nullptr. activation_rows: s' below. split_backward: the blocks run
  // backward_input and backward_weight (LayerKernels::splits_backward).
  ModelChunk(LayerKernels& kernels, const ChunkLayout& layout, const ModelSpec& model,
             int recompute_every, EmbeddingLayer* tied_embedding, int64_t activation_rows,
             bool split_backward = false);

  const ChunkLayout& layout() const { return layout_; }
  std::vector<ParamRef> parameters();
  // For each parameter of parameters(), the layer that holds it: its index in forward order
  // among the chunk's embedding, blocks and head.
  std::vector<int> parameter_layers();
  EmbeddingLayer* embedding() { return embedding_.get(); }
  // The chunk's transformer blocks, each with its global layer index.
  std::vector<std::pair<int, TransformerBlock*>> blocks() const {
    std::vector<std::pair<int, TransformerBlock*>> out;
    for (size_t i = 0; i < blocks_.size(); ++i) out.emplace_back(layout_.first_layer + static_cast<int>(i), blocks_[i].get());
    return out;
  }

  // Activations between layers are [s', b, h]: s' = s, or under sequence parallelism this tensor
  // rank's s/t rows of the sequence (KernelsBinding::sequence_parallel).
  std::vector<int64_t> activation_shape() const;

  // input: activation [s', b, h] (ignored when the chunk has the embedding). Returns the output
  // activation, or an empty tensor when the chunk has the head (the loss goes to `loss`).
  // layer_starting, when given, is called with each layer's index (as parameter_layers()
  // numbers them) right before that layer's forward.
  OwnedTensor forward(const MicroBatch& mb, const Tensor& input, const MicrobatchTokens& batch,
                      Tensor loss, bool training, const std::function<void(int)>& layer_starting = {});
  // A whole model on one rank (embedding to head), forward without dropout, keeping nothing:
  // logits F32 [s, b, padded_vocab / t] on the kernels' device (HeadLayer::logits).
  void logits(const MicroBatch& mb, const Tensor& tokens, Tensor logits);
  // doutput: gradient of the output (ignored when the chunk has the head, which starts from
  // loss_scale). Returns the gradient of the input, or an empty tensor for the first chunk.
  // layer_done, when given, is called with each layer's index (as parameter_layers() numbers
  // them) right after that layer's backward.
  OwnedTensor backward(const MicroBatch& mb, const Tensor& doutput, float loss_scale,
                       const std::function<void(int)>& layer_done = {});
  // backward() in a zero-bubble schedule's two parts. backward_input returns what backward
  // returns: the head and the embedding run their whole backward in it, the blocks their
  // backward_input (or, where the kernels do not split, their whole backward). backward_weight
  // runs the blocks' backward_weight (or nothing) and then calls layer_done for every layer, in
  // backward's order: from there the layers' gradients hold this microbatch's share.
  OwnedTensor backward_input(const MicroBatch& mb, const Tensor& doutput, float loss_scale);
  void backward_weight(const MicroBatch& mb, const std::function<void(int)>& layer_done = {});

 private:
  OwnedTensor activation();
  // A buffer for a block's output (or input gradient): `spare`, taken, when it holds one (a
  // buffer the previous block read, which nothing reads again), else a new one. A block writes
  // all of it, so reuse skips allocate()'s zero fill (on the GPU, a 32 MiB memset a block at
  // the 1.3B model's micro-batch 4).
  OwnedTensor reused_activation(OwnedTensor& spare);
  // The whole backward, or its input part (split: the blocks' backward_input).
  OwnedTensor backward_pass(const MicroBatch& mb, const Tensor& doutput, float loss_scale, bool input_only,
                            const std::function<void(int)>& layer_done);
  void forward_blocks(const MicroBatch& mb, size_t first, size_t last, OwnedTensor& x, bool save,
                      const std::function<void(int)>& layer_starting = {});

  LayerKernels& kernels_;
  ChunkLayout layout_;
  ModelSpec model_;
  int recompute_every_;  // 0: keep every block's activations
  int64_t activation_rows_;
  bool split_backward_;
  std::shared_ptr<EmbeddingLayer> embedding_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  std::shared_ptr<HeadLayer> head_;
  // Inputs of each recompute segment, per microbatch slot, kept until that backward.
  std::map<int, std::vector<OwnedTensor>> segment_inputs_;
};

}  // namespace ptdp
