#include "head_layer.hpp"

#include <algorithm>
#include <string>

#include "cross_entropy.hpp"
#include "embedding_layer.hpp"
#include "layer_norm.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct FusedHead::Activations {
  DeviceBuffer<act_t> x;        // head input         [local tokens, h]
  DeviceBuffer<act_t> xn;       // final LayerNorm    [tokens, h], gathered under sequence parallelism
  DeviceBuffer<float> ln_stats; // mean | rstd        [2, local tokens]
  DeviceBuffer<act_t> logits;   // this rank's vocabulary columns [tokens, V/t]; backward overwrites
  DeviceBuffer<int32_t> targets;
  DeviceBuffer<float> ce_stats; // group max | sum exp | target logit [3, tokens]
  // One-pass cross entropy: forward left (softmax - onehot) / tokens in logits, and backward's
  // GEMMs scale it by the loss scale.
  bool logits_hold_gradient = false;
};

FusedHead::FusedHead(std::shared_ptr<Backend> backend, std::shared_ptr<Parameter> word)
    : backend_(std::move(backend)), word_(std::move(word)) {
  const ModelSpec& m = backend_->model();
  vocab_rows_ = m.padded_vocab / backend_->tp_size();
  vocab_begin_ = vocab_rows_ * backend_->tp_rank();
  valid_cols_ = std::clamp<int64_t>(m.vocab - vocab_begin_, 0, vocab_rows_);
  const auto norm = gpt_head_norm(m.hidden);
  ln_weight_ = backend_->make_parameter(spec_of(norm[0], false, true));
  ln_bias_ = backend_->make_parameter(spec_of(norm[1], false, true));
  if (!word_) {
    owns_word_ = true;
    word_ = backend_->make_parameter(
        spec_of(gpt_word_embedding(m.padded_vocab, m.hidden, backend_->tp_size(), backend_->tp_rank()), true, false));
  }
}

std::vector<ParamRef> FusedHead::parameters() {
  std::vector<ParamRef> refs{ln_weight_->ref(), ln_bias_->ref()};
  if (owns_word_) refs.push_back(word_->ref());
  return refs;
}

void FusedHead::forward(const MicroBatch& mb, const Tensor& in, const Tensor& targets, Tensor loss, bool save) {
  const ModelSpec& m = backend_->model();
  TensorParallelRows& rows = backend_->rows();
  backend_->expect(in, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden}, "head forward: in");
  backend_->expect(targets, DType::I32, MemoryKind::Host, {m.seq_len, m.micro_batch}, "head forward: targets");
  backend_->expect(loss, DType::F32, MemoryKind::Cuda, {1}, "head forward: loss");
  check_token_ids(targets, m.vocab, "head forward: targets");
  if (save) saved_.require_free(mb.slot);
  backend_->activate();
  const KernelContext& k = backend_->kernel_context();
  DeviceArena& arena = backend_->arena();
  const int64_t tokens = rows.tokens(), local = rows.local_tokens(), h = m.hidden;

  auto a = std::make_shared<Activations>();
  // Backward needs the input, which the caller may overwrite once this returns: LayerNorm keeps a
  // copy as it reads it.
  const act_t* x = in.as<const act_t>();
  if (save) a->x = allocate_buffer<act_t>(arena, size_t(local * h));
  DeviceBuffer<act_t> xn_rows = allocate_buffer<act_t>(arena, size_t(local * h));
  a->ln_stats = allocate_buffer<float>(arena, size_t(2 * local));
  a->logits = allocate_buffer<act_t>(arena, size_t(tokens * vocab_rows_));
  a->targets = allocate_buffer<int32_t>(arena, size_t(tokens));
  a->ce_stats = allocate_buffer<float>(arena, size_t(3 * tokens));
  backend_->upload().copy(a->targets.get(), targets.data, size_t(tokens) * sizeof(int32_t));

  layer_norm_forward(x, ln_weight_->master(), ln_bias_->master(), xn_rows.get(), a->ln_stats.get(),
                     a->ln_stats.get() + local, local, h, m.layernorm_eps, k, save ? a->x.get() : nullptr);
  // The logits' GEMM is column-parallel over the vocabulary: all rows, gathered under sequence
  // parallelism.
  if (rows.sequence_parallel()) rows.column_parallel_input(xn_rows.get(), a->xn, h);
  else a->xn = std::move(xn_rows);
  backend_->gemm().linear_forward(a->xn.get(), word_->working(), nullptr, a->logits.get(), tokens, h, vocab_rows_);
  float* stats = a->ce_stats.get();
  a->logits_hold_gradient = save && backend_->tp_size() == 1 && backend_->options().one_pass_cross_entropy;
  if (a->logits_hold_gradient) {
    // Backward's loss scale is not known yet: the gradient is written for a scale of 1.
    cross_entropy_stats_and_gradient(a->logits.get(), a->targets.get(), tokens, vocab_rows_, valid_cols_,
                                     1.0f / float(tokens), stats, k);
  } else {
    cross_entropy_row_stats(a->logits.get(), a->targets.get(), tokens, vocab_rows_, vocab_begin_, valid_cols_, stats,
                            k);
  }
  if (backend_->tp_size() > 1) {
    auto group_max = allocate_buffer<float>(arena, size_t(tokens));
    PTDP_CALL(cudaMemcpyAsync(group_max.get(), stats, size_t(tokens) * sizeof(float), cudaMemcpyDeviceToDevice,
                              backend_->stream()));
    backend_->all_reduce(group_max.get(), DType::F32, tokens, ReduceOp::Max);
    cross_entropy_rescale(stats, group_max.get(), tokens, k);
    backend_->all_reduce(stats + tokens, DType::F32, 2 * tokens, ReduceOp::Sum);
  }
  cross_entropy_loss(stats, tokens, loss.as<float>(), k);

  if (save) saved_.put(mb.slot, std::move(a));
}

void FusedHead::backward(const MicroBatch& mb, float loss_scale, Tensor din) {
  const ModelSpec& m = backend_->model();
  TensorParallelRows& rows = backend_->rows();
  backend_->expect(din, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden}, "head backward: din");
  std::shared_ptr<Activations> a = saved_.take(mb.slot);
  backend_->activate();
  const KernelContext& k = backend_->kernel_context();
  Gemm& gemm = backend_->gemm();
  const int64_t tokens = rows.tokens(), local = rows.local_tokens(), h = m.hidden;

  act_t* dlogits = a->logits.get();
  float gemm_scale = loss_scale;
  if (!a->logits_hold_gradient) {
    cross_entropy_backward(dlogits, a->targets.get(), a->ce_stats.get(), tokens, vocab_rows_, vocab_begin_,
                           valid_cols_, loss_scale / float(tokens), k);
    gemm_scale = 1.0f;
  }
  gemm.linear_backward_weight(dlogits, a->xn.get(), word_->grad(), tokens, h, vocab_rows_, nullptr, gemm_scale);
  auto d_xn = allocate_buffer<act_t>(backend_->arena(), size_t(tokens * h));
  gemm.linear_backward_input(dlogits, word_->working(), d_xn.get(), tokens, h, vocab_rows_, gemm_scale);
  DeviceBuffer<act_t> d_xn_rows;
  const act_t* d_rows = rows.column_parallel_input_grad(d_xn.get(), d_xn_rows, h);
  layer_norm_backward(d_rows, a->x.get(), ln_weight_->master(), a->ln_stats.get(), a->ln_stats.get() + local, nullptr,
                      din.as<act_t>(), ln_weight_->grad(), ln_bias_->grad(), local, h, k);
}

void FusedHead::release(int slot) { saved_.release(slot); }

void FusedHead::logits(const MicroBatch&, const Tensor& in, Tensor logits) {
  const ModelSpec& m = backend_->model();
  TensorParallelRows& rows = backend_->rows();
  backend_->expect(in, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden}, "head logits: in");
  backend_->expect(logits, DType::F32, MemoryKind::Cuda, {m.seq_len, m.micro_batch, vocab_rows_}, "head logits: logits");
  backend_->activate();
  const int64_t tokens = rows.tokens(), local = rows.local_tokens(), h = m.hidden;
  auto xn_rows = allocate_buffer<act_t>(backend_->arena(), size_t(local * h));
  auto stats = allocate_buffer<float>(backend_->arena(), size_t(2 * local));
  layer_norm_forward(in.as<const act_t>(), ln_weight_->master(), ln_bias_->master(), xn_rows.get(), stats.get(),
                     stats.get() + local, local, h, m.layernorm_eps, backend_->kernel_context());
  DeviceBuffer<act_t> gathered;
  const act_t* xn = rows.column_parallel_input(xn_rows.get(), gathered, h);
  // fp32 straight from the GEMM's accumulator: sampling compares logits, bf16 would tie many.
  // Column-major: logits^T[V/t, tokens] = word(h x V/t as stored)^T * xn^T(h x tokens).
  backend_->gemm().matmul(true, false, vocab_rows_, tokens, h, word_->working(), h, xn, h, logits.as<float>(),
                          CUDA_R_32F, vocab_rows_, 0.0f);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
