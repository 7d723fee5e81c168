#include "support/gpt_stack.hpp"

namespace ptdp::test {

namespace {

Tensor host_ids(const std::vector<int32_t>& ids, const ModelSpec& m) {
  return Tensor{const_cast<int32_t*>(ids.data()), DType::I32, {m.seq_len, m.micro_batch},
                Device{MemoryKind::Host, 0}};
}

}  // namespace

GptStack::GptStack(LayerKernels& kernels, const ModelSpec& model, int64_t activation_rows)
    : kernels_(kernels), model_(model) {
  embedding_ = kernels_.make_embedding();
  for (int i = 0; i < model_.layers; ++i) blocks_.push_back(kernels_.make_block(i));
  head_ = kernels_.make_head(embedding_.get());
  for (const ParamRef& p : embedding_->parameters()) params_.push_back(p);
  for (const auto& block : blocks_)
    for (const ParamRef& p : block->parameters()) params_.push_back(p);
  for (const ParamRef& p : head_->parameters()) params_.push_back(p);
  const std::vector<int64_t> act{activation_rows > 0 ? activation_rows : model_.seq_len, model_.micro_batch,
                                 model_.hidden};
  for (int i = 0; i < 2; ++i) {
    activations_[i] = kernels_.allocate(act, kernels_.activation_dtype());
    gradients_[i] = kernels_.allocate(act, kernels_.activation_dtype());
  }
  loss_ = kernels_.allocate({1}, DType::F32);
}

void GptStack::load(const TensorMap& global) {
  for (const ParamRef& p : params_) {
    auto it = global.find(p.name);
    if (it == global.end()) throw Error("no global tensor for parameter " + p.name);
    if (it->second.shape != p.global_shape)
      throw Error("parameter " + p.name + " has global shape " + shape_string(p.global_shape) +
                  ", the given tensor " + shape_string(it->second.shape));
    const std::vector<float> local = slice_global(shard_layout(p), it->second.values);
    kernels_.copy_from_host(p.master, local.data());
  }
  kernels_.params_updated();
}

std::vector<LocalTensor> GptStack::snapshot(bool grads) const {
  std::vector<LocalTensor> out;
  for (const ParamRef& p : params_) {
    LocalTensor t{shard_layout(p), std::vector<float>(static_cast<size_t>(p.master.numel()))};
    kernels_.copy_to_host(t.values.data(), grads ? p.grad : p.master);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<LocalTensor> GptStack::masters() const { return snapshot(false); }
std::vector<LocalTensor> GptStack::grads() const { return snapshot(true); }

void GptStack::zero_grads() {
  for (const ParamRef& p : params_) kernels_.fill_zero(p.grad);
}

void GptStack::stale_block_grads(float stale) {
  zero_grads();
  for (const auto& block : blocks_)
    for (const ParamRef& p : block->parameters()) {
      const std::vector<float> values(static_cast<size_t>(p.grad.numel()), stale);
      kernels_.copy_from_host(p.grad, values.data());
    }
}

const Tensor& GptStack::run_trunk(const MicroBatch& mb, const TokenBatch& batch, bool save) {
  embedding_->forward(mb, host_ids(batch.tokens, model_), activations_[0].view, save);
  int cur = 0;
  for (const auto& block : blocks_) {
    block->forward(mb, activations_[cur].view, activations_[1 - cur].view, save);
    cur = 1 - cur;
  }
  return activations_[cur].view;
}

float GptStack::forward(const MicroBatch& mb, const TokenBatch& batch, bool recompute) {
  const Tensor& x = run_trunk(mb, batch, !recompute);
  if (recompute) to_recompute_[mb.slot] = batch;
  head_->forward(mb, x, host_ids(batch.targets, model_), loss_.view, true);
  float loss = 0.0f;
  kernels_.copy_to_host(&loss, loss_.view);
  return loss;
}

void GptStack::backward(const MicroBatch& mb, float loss_scale, bool split_blocks) {
  auto it = to_recompute_.find(mb.slot);
  if (it != to_recompute_.end()) {
    run_trunk(mb, it->second, true);
    to_recompute_.erase(it);
  }
  int cur = 0;
  head_->backward(mb, loss_scale, gradients_[cur].view);
  for (auto block = blocks_.rbegin(); block != blocks_.rend(); ++block) {
    if (split_blocks)
      (*block)->backward_input(mb, gradients_[cur].view, gradients_[1 - cur].view);
    else
      (*block)->backward(mb, gradients_[cur].view, gradients_[1 - cur].view);
    cur = 1 - cur;
  }
  embedding_->backward(mb, gradients_[cur].view);
}

void GptStack::backward_weight(const MicroBatch& mb) {
  for (auto block = blocks_.rbegin(); block != blocks_.rend(); ++block) (*block)->backward_weight(mb);
}

void GptStack::adam_step(const AdamStep& step) { kernels_.adam_step(params_, step); }

}  // namespace ptdp::test
