#include "runtime/model_chunk.hpp"

#include <algorithm>
#include <utility>

namespace ptdp {

ModelChunk::ModelChunk(LayerKernels& kernels, const ChunkLayout& layout, const ModelSpec& model,
                       int recompute_every, EmbeddingLayer* tied_embedding, int64_t activation_rows,
                       bool split_backward)
    : kernels_(kernels),
      layout_(layout),
      model_(model),
      recompute_every_(recompute_every),
      activation_rows_(activation_rows),
      split_backward_(split_backward) {
  if (layout.has_embedding) embedding_ = kernels.make_embedding();
  for (int i = 0; i < layout.num_layers; ++i) blocks_.push_back(kernels.make_block(layout.first_layer + i));
  if (layout.has_head) {
    EmbeddingLayer* tied = tied_embedding ? tied_embedding : embedding_.get();
    head_ = kernels.make_head(tied);
  }
}

std::vector<ParamRef> ModelChunk::parameters() {
  std::vector<ParamRef> params;
  auto append = [&](std::vector<ParamRef> more) {
    for (auto& p : more) params.push_back(std::move(p));
  };
  if (embedding_) append(embedding_->parameters());
  for (auto& b : blocks_) append(b->parameters());
  if (head_) append(head_->parameters());
  return params;
}

std::vector<int> ModelChunk::parameter_layers() {
  std::vector<int> layers;
  int layer = 0;
  auto append = [&](size_t count) {
    layers.insert(layers.end(), count, layer++);
  };
  if (embedding_) append(embedding_->parameters().size());
  for (auto& b : blocks_) append(b->parameters().size());
  if (head_) append(head_->parameters().size());
  return layers;
}

std::vector<int64_t> ModelChunk::activation_shape() const {
  return {activation_rows_, model_.micro_batch, model_.hidden};
}

OwnedTensor ModelChunk::activation() { return kernels_.allocate(activation_shape(), kernels_.activation_dtype()); }

OwnedTensor ModelChunk::reused_activation(OwnedTensor& spare) {
  if (!spare.storage) return activation();
  return std::exchange(spare, {});
}

void ModelChunk::forward_blocks(const MicroBatch& mb, size_t first, size_t last, OwnedTensor& x, bool save,
                                const std::function<void(int)>& layer_starting) {
  const int first_block = embedding_ ? 1 : 0;
  OwnedTensor spare;  // the previous block's input: nothing reads it again (reused_activation)
  for (size_t i = first; i < last; ++i) {
    if (layer_starting) layer_starting(first_block + static_cast<int>(i));
    OwnedTensor y = reused_activation(spare);
    blocks_[i]->forward(mb, x.view, y.view, save);
    spare = std::move(x);
    x = std::move(y);
  }
}

OwnedTensor ModelChunk::forward(const MicroBatch& mb, const Tensor& input, const MicrobatchTokens& batch,
                                Tensor loss, bool training, const std::function<void(int)>& layer_starting) {
  OwnedTensor x;
  if (embedding_) {
    if (layer_starting) layer_starting(0);
    x = activation();
    embedding_->forward(mb, *batch.tokens, x.view, training);
  } else {
    x = activation();
    kernels_.copy(x.view, input);
  }
  const size_t n = blocks_.size();
  if (!training) {
    forward_blocks(mb, 0, n, x, false, layer_starting);
  } else if (recompute_every_ <= 0) {
    forward_blocks(mb, 0, n, x, true, layer_starting);
  } else {
    auto& inputs = segment_inputs_[mb.slot];
    inputs.clear();
    for (size_t first = 0; first < n; first += recompute_every_) {
      OwnedTensor kept = activation();
      kernels_.copy(kept.view, x.view);
      inputs.push_back(std::move(kept));
      forward_blocks(mb, first, std::min(n, first + recompute_every_), x, false, layer_starting);
    }
  }
  if (head_) {
    if (layer_starting) layer_starting((embedding_ ? 1 : 0) + static_cast<int>(n));
    head_->forward(mb, x.view, *batch.targets, loss, training);
    return {};
  }
  return x;
}

void ModelChunk::logits(const MicroBatch& mb, const Tensor& tokens, Tensor logits) {
  PTDP_CHECK(embedding_ && head_, "logits need the whole model in one chunk (p = 1, v = 1)");
  OwnedTensor x = activation();
  embedding_->forward(mb, tokens, x.view, false);
  forward_blocks(mb, 0, blocks_.size(), x, false);
  head_->logits(mb, x.view, logits);
}

OwnedTensor ModelChunk::backward(const MicroBatch& mb, const Tensor& doutput, float loss_scale,
                                 const std::function<void(int)>& layer_done) {
  return backward_pass(mb, doutput, loss_scale, false, layer_done);
}

OwnedTensor ModelChunk::backward_input(const MicroBatch& mb, const Tensor& doutput, float loss_scale) {
  return backward_pass(mb, doutput, loss_scale, true, {});
}

void ModelChunk::backward_weight(const MicroBatch& mb, const std::function<void(int)>& layer_done) {
  const int first_block = embedding_ ? 1 : 0;
  const size_t n = blocks_.size();
  auto done = [&](int layer) {
    if (layer_done) layer_done(layer);
  };
  if (head_) done(first_block + static_cast<int>(n));
  for (size_t i = n; i-- > 0;) {
    if (split_backward_) blocks_[i]->backward_weight(mb);
    done(first_block + static_cast<int>(i));
  }
  if (embedding_) done(0);
}

OwnedTensor ModelChunk::backward_pass(const MicroBatch& mb, const Tensor& doutput, float loss_scale, bool input_only,
                                      const std::function<void(int)>& layer_done) {
  const int first_block = embedding_ ? 1 : 0;
  const size_t n = blocks_.size();
  auto done = [&](int layer) {
    if (layer_done) layer_done(layer);
  };
  OwnedTensor dx = activation();
  if (head_) {
    head_->backward(mb, loss_scale, dx.view);
    done(first_block + static_cast<int>(n));
  } else {
    kernels_.copy(dx.view, doutput);
  }
  auto backward_range = [&](size_t first, size_t last) {
    OwnedTensor spare;  // the previous block's output gradient
    for (size_t i = last; i-- > first;) {
      OwnedTensor din = reused_activation(spare);
      if (input_only && split_backward_)
        blocks_[i]->backward_input(mb, dx.view, din.view);
      else
        blocks_[i]->backward(mb, dx.view, din.view);
      spare = std::move(dx);
      dx = std::move(din);
      done(first_block + static_cast<int>(i));
    }
  };
  if (recompute_every_ <= 0) {
    backward_range(0, n);
  } else {
    auto found = segment_inputs_.find(mb.slot);
    PTDP_CHECK(found != segment_inputs_.end(), "backward of a microbatch whose forward did not run");
    auto& inputs = found->second;
    for (size_t seg = inputs.size(); seg-- > 0;) {
      const size_t first = seg * recompute_every_;
      const size_t last = std::min(n, first + recompute_every_);
      OwnedTensor x = std::move(inputs[seg]);
      forward_blocks(mb, first, last, x, true);  // recompute, keeping activations this time
      backward_range(first, last);
    }
    segment_inputs_.erase(found);
  }
  if (embedding_) {
    embedding_->backward(mb, dx.view);
    done(0);
    return {};
  }
  return dx;
}

}  // namespace ptdp
