#include "block.hpp"

#include <algorithm>

#include "attention.hpp"
#include "dropout.hpp"
#include "gelu.hpp"
#include "layer_norm.hpp"
#include "linear.hpp"
#include "tensor_checks.hpp"

namespace ptdp::kref {

namespace {

// The block's linear layers: QKV and FC1 are column-parallel, the projection and FC2 row-parallel.
constexpr int kQkv = 0, kProj = 1, kFc1 = 2, kFc2 = 3;
constexpr LinearSite kQkvSite{kQkv, false, true}, kProjSite{kProj, true, false};
constexpr LinearSite kFc1Site{kFc1, false, true}, kFc2Site{kFc2, true, false};

std::vector<float> zeros(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 0.0f); }

// A column-parallel GEMM's input: this rank's rows `local`, or under sequence parallelism all
// rows, gathered into `whole`.
const float* column_parallel_input(const Partition& p, std::vector<float>& local, std::vector<float>& whole) {
  if (!p.regions.sequence_parallel()) return local.data();
  whole.resize(static_cast<size_t>(p.tokens() * p.model.hidden));
  return p.regions.column_parallel_input(host_view(local.data(), int64_t(local.size())), host_view(whole.data(), int64_t(whole.size())))
      .as<float>();
}

// The gradient of a column-parallel GEMM's input for this rank's rows: the partial sums `dwhole`
// all-reduced in place or, under sequence parallelism, reduce-scattered into `dlocal`.
const float* column_parallel_input_grad(const Partition& p, std::vector<float>& dwhole, std::vector<float>& dlocal) {
  dlocal.resize(p.regions.sequence_parallel() ? static_cast<size_t>(p.local_tokens() * p.model.hidden) : 0);
  return p.regions.column_parallel_input_grad(host_view(dwhole.data(), int64_t(dwhole.size())), host_view(dlocal.data(), int64_t(dlocal.size())))
      .as<float>();
}

// The gradient of a row-parallel GEMM's output as its backward reads it: this rank's rows
// `dlocal`, or under sequence parallelism all rows, gathered into `dwhole`.
const float* row_parallel_output_grad(const Partition& p, std::vector<float>& dlocal, std::vector<float>& dwhole) {
  return column_parallel_input(p, dlocal, dwhole);  // the same all-gather (the paper's ḡ)
}

// Completes a row-parallel GEMM's partial sums for this rank's rows (all-reduce, or
// reduce-scatter under sequence parallelism), then out = residual + dropout(sum + bias) there.
void reduce_bias_dropout_add(float* out, std::vector<float>& partial, const float* bias,
                             const float* residual, const Partition& part, const MicroBatch& mb,
                             int site) {
  const int64_t nl = part.local_tokens(), h = part.model.hidden;
  std::vector<float> local(part.regions.sequence_parallel() ? static_cast<size_t>(nl * h) : 0);
  float* sum = part.regions.row_parallel_output(host_view(partial.data(), int64_t(partial.size())), host_view(local.data(), int64_t(local.size())))
                   .as<float>();
  add_bias(sum, bias, nl, h);
  apply_dropout(sum, part.model, mb, site, part.first_position(), part.local_seq());
  for (int64_t i = 0; i < nl * h; ++i) out[i] = residual[i] + sum[i];
}

}  // namespace

BlockActivations::BlockActivations(const Partition& p) {
  const int64_t s = p.model.seq_len, b = p.model.micro_batch, h = p.model.hidden;
  const int64_t n = p.tokens(), nl = p.local_tokens(), hl = p.local_hidden(), fl = p.local_ffn();
  for (auto* v : {&x, &ln1, &residual, &ln2}) *v = zeros(nl * h);
  for (auto* v : {&ln1_mean, &ln1_rstd, &ln2_mean, &ln2_rstd}) *v = zeros(nl);
  qkv = zeros(n * 3 * hl);
  probs = zeros(b * p.local_heads() * s * s);
  attn = zeros(n * hl);
  fc1 = zeros(n * fl);
  gelu = zeros(n * fl);
}

RefBlock::RefBlock(std::shared_ptr<const Partition> partition, int layer_index)
    : part_(std::move(partition)),
      layer_(layer_index),
      name_("layers." + std::to_string(layer_index)),
      saved_("kernels-ref: " + name_),
      weight_gradient_inputs_("kernels-ref: " + name_ + " weight gradients") {
  const Partition& p = *part_;
  std::shared_ptr<Parameter>* const in_table_order[] = {&ln1_weight_, &ln1_bias_, &qkv_weight_, &qkv_bias_,
                                                      &proj_weight_, &proj_bias_, &ln2_weight_, &ln2_bias_,
                                                      &fc1_weight_, &fc1_bias_, &fc2_weight_, &fc2_bias_};
  const auto table = gpt_block_parameters(layer_index, p.model.hidden, p.model.ffn_hidden, p.size, p.rank);
  for (size_t i = 0; i < table.size(); ++i) *in_table_order[i] = make_parameter(table[i], p);
  fp8_ = p.fp8.block_in_fp8(layer_index, p.model.layers);
  if (fp8_) {
    constexpr int kEntries = kFp8BlockLinears * kFp8Operands;
    own_fp8_.assign(2 * kEntries, 0.0f);
    std::fill(own_fp8_.begin() + kEntries, own_fp8_.end(), 1.0f);
    for (int k = 0; k < kFp8BlockLinears; ++k)
      fp8_linears_[k] = {own_fp8_.data() + k * kFp8Operands, own_fp8_.data() + kEntries + k * kFp8Operands};
  }
}

void RefBlock::bind_fp8_scaling(Tensor amax, Tensor scale) {
  if (!fp8_) throw Error("kernels-ref: " + name_ + " runs no FP8 GEMMs under this binding's recipe");
  check_host_tensor(amax, DType::F32, {kFp8BlockLinears, kFp8Operands}, name_ + " FP8 amax");
  check_host_tensor(scale, DType::F32, {kFp8BlockLinears, kFp8Operands}, name_ + " FP8 scale");
  for (int k = 0; k < kFp8BlockLinears; ++k)
    fp8_linears_[k] = {amax.as<float>() + k * kFp8Operands, scale.as<float>() + k * kFp8Operands};
  own_fp8_.clear();
}

void RefBlock::linear_forward_of(const LinearSite& site, float* out, const float* in, const Parameter& weight,
                                 const float* bias, int64_t n, int64_t in_dim, int64_t out_dim, const MicroBatch& mb,
                                 float& input_scale) {
  const Partition& p = *part_;
  if (!fp8_) {
    std::vector<float> copy;
    return linear_forward(out, in, p.working_weights(weight.value(), out_dim * in_dim, copy), bias, n, in_dim,
                          out_dim);
  }
  const Fp8LinearScaling& scaling = fp8_linears_[site.index];
  const Fp8Cast x = fp8_cast(in, n * in_dim, Fp8Operand::Input, site.input_sharded, scaling, p, mb.training);
  const Fp8Cast w = fp8_cast(weight.value(), out_dim * in_dim, Fp8Operand::Weight, true, scaling, p, mb.training);
  fp8_linear_forward(out, x, w, bias, n, in_dim, out_dim);
  input_scale = x.scale;
}

void RefBlock::linear_backward_input_of(const LinearSite& site, float* din, const Parameter& weight,
                                        const float* dout, const float* in, float input_scale, int64_t n,
                                        int64_t in_dim, int64_t out_dim, const MicroBatch& mb,
                                        BlockWeightGradientInputs& kept) {
  const Partition& p = *part_;
  kept.linear_input[site.index].assign(in, in + n * in_dim);
  kept.linear_output_grad[site.index].assign(dout, dout + n * out_dim);
  kept.fp8_input_scale[site.index] = input_scale;
  if (!fp8_) {
    std::vector<float> copy;
    return linear_backward_input(din, dout, p.working_weights(weight.value(), out_dim * in_dim, copy), n, in_dim,
                                 out_dim);
  }
  const Fp8LinearScaling& scaling = fp8_linears_[site.index];
  Fp8Cast& dy = kept.linear_output_grad_fp8[site.index];
  dy = fp8_cast(dout, n * out_dim, Fp8Operand::OutputGradient, site.output_gradient_sharded, scaling, p, mb.training);
  const Fp8Cast w = fp8_cast(weight.value(), out_dim * in_dim, Fp8Operand::Weight, true, scaling, p, mb.training);
  fp8_linear_backward_input(din, dy, w, n, in_dim, out_dim);
}

void RefBlock::linear_backward_weight_of(const LinearSite& site, const Parameter& weight, float* dbias, int64_t n,
                                         int64_t in_dim, int64_t out_dim, const BlockWeightGradientInputs& kept) const {
  const float* in = kept.linear_input[site.index].data();
  const float* dout = kept.linear_output_grad[site.index].data();
  if (!fp8_) return linear_backward_weight(weight.grad(), dbias, dout, in, n, in_dim, out_dim);
  const Fp8Cast x = fp8_cast_with_scale(in, n * in_dim, Fp8Operand::Input, kept.fp8_input_scale[site.index]);
  fp8_linear_backward_weight(weight.grad(), dbias, dout, kept.linear_output_grad_fp8[site.index], x, n, in_dim,
                             out_dim);
}

std::vector<ParamRef> RefBlock::parameters() {
  std::vector<ParamRef> refs;
  for (const auto* p : {&ln1_weight_, &ln1_bias_, &qkv_weight_, &qkv_bias_, &proj_weight_, &proj_bias_,
                        &ln2_weight_, &ln2_bias_, &fc1_weight_, &fc1_bias_, &fc2_weight_, &fc2_bias_})
    refs.push_back((*p)->ref);
  return refs;
}

void RefBlock::layer_norm_of(std::vector<float>& ln, std::vector<float>& mean, std::vector<float>& rstd,
                             const std::vector<float>& x, const Parameter& weight, const Parameter& bias) const {
  const Partition& p = *part_;
  const int64_t nl = p.local_tokens(), h = p.model.hidden;
  ln.assign(static_cast<size_t>(nl * h), 0.0f);
  mean.assign(static_cast<size_t>(nl), 0.0f);
  rstd.assign(static_cast<size_t>(nl), 0.0f);
  layer_norm_forward(ln.data(), mean.data(), rstd.data(), x.data(), weight.value(), bias.value(), nl, h,
                     p.model.layernorm_eps);
  // Under fp16 the inputs of the linear layers are rounded as they are made, so the backward's
  // weight gradients read the same (saved or recomputed) values as the forward did.
  p.to_working(ln.data(), nl * h);
}

void RefBlock::recompute(BlockActivations& a) const {
  const Partition& p = *part_;
  const int64_t s = p.model.seq_len, b = p.model.micro_batch, n = p.tokens(), fl = p.local_ffn();
  if (p.recomputes(RecomputeModule::LayerNorm)) {
    layer_norm_of(a.ln1, a.ln1_mean, a.ln1_rstd, a.x, *ln1_weight_, *ln1_bias_);
    layer_norm_of(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual, *ln2_weight_, *ln2_bias_);
  }
  if (p.recomputes(RecomputeModule::MlpActivation)) {
    a.gelu = zeros(n * fl);
    gelu_forward(a.gelu.data(), a.fc1.data(), n * fl);
    p.to_working(a.gelu.data(), n * fl);
  }
  if (p.recomputes(RecomputeModule::CoreAttention)) {
    a.probs = zeros(b * p.local_heads() * s * s);
    std::vector<float> context = zeros(n * p.local_hidden());  // kept in a.attn already
    attention_forward(context.data(), a.probs.data(), a.qkv.data(), AttentionShape{s, b, p.local_heads(), p.head_dim()});
  }
}

void RefBlock::forward(const MicroBatch& mb, const Tensor& in, Tensor out, bool save) {
  const Partition& p = *part_;
  const int64_t s = p.model.seq_len, b = p.model.micro_batch, h = p.model.hidden;
  const int64_t n = p.tokens(), nl = p.local_tokens(), hl = p.local_hidden(), fl = p.local_ffn();
  check_host_tensor(in, DType::F32, {p.local_seq(), b, h}, name_ + " forward: in");
  check_host_tensor(out, DType::F32, {p.local_seq(), b, h}, name_ + " forward: out");
  if (save) saved_.require_free(mb.slot);

  BlockActivations a(p);
  std::copy(in.as<float>(), in.as<float>() + nl * h, a.x.begin());  // `out` may be `in`
  std::vector<float> whole;  // a LayerNorm's output gathered over the sequence
  layer_norm_of(a.ln1, a.ln1_mean, a.ln1_rstd, a.x, *ln1_weight_, *ln1_bias_);
  linear_forward_of(kQkvSite, a.qkv.data(), column_parallel_input(p, a.ln1, whole), *qkv_weight_,
                    qkv_bias_->value(), n, h, 3 * hl, mb, a.fp8_input_scale[kQkv]);
  const AttentionShape shape{s, b, p.local_heads(), p.head_dim()};
  attention_forward(a.attn.data(), a.probs.data(), a.qkv.data(), shape);
  p.to_working(a.attn.data(), n * hl);
  std::vector<float> partial = zeros(n * h);
  linear_forward_of(kProjSite, partial.data(), a.attn.data(), *proj_weight_, nullptr, n, hl, h, mb,
                    a.fp8_input_scale[kProj]);
  reduce_bias_dropout_add(a.residual.data(), partial, proj_bias_->value(), a.x.data(), p, mb,
                          attention_dropout_site(layer_));

  layer_norm_of(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual, *ln2_weight_, *ln2_bias_);
  linear_forward_of(kFc1Site, a.fc1.data(), column_parallel_input(p, a.ln2, whole), *fc1_weight_,
                    fc1_bias_->value(), n, h, fl, mb, a.fp8_input_scale[kFc1]);
  gelu_forward(a.gelu.data(), a.fc1.data(), n * fl);
  p.to_working(a.gelu.data(), n * fl);
  linear_forward_of(kFc2Site, partial.data(), a.gelu.data(), *fc2_weight_, nullptr, n, fl, h, mb,
                    a.fp8_input_scale[kFc2]);
  reduce_bias_dropout_add(out.as<float>(), partial, fc2_bias_->value(), a.residual.data(), p, mb,
                          mlp_dropout_site(layer_));
  p.to_working(out.as<float>(), nl * h);

  if (!save) return;
  // Selective recomputation: what the backward recomputes is not kept.
  if (p.recomputes(RecomputeModule::LayerNorm))
    for (auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.ln2, &a.ln2_mean, &a.ln2_rstd}) std::vector<float>().swap(*v);
  if (p.recomputes(RecomputeModule::MlpActivation)) std::vector<float>().swap(a.gelu);
  if (p.recomputes(RecomputeModule::CoreAttention)) std::vector<float>().swap(a.probs);
  saved_.put(mb.slot, std::move(a));
}

void RefBlock::backward(const MicroBatch& mb, const Tensor& dout, Tensor din) {
  backward_input(mb, dout, din);
  backward_weight(mb);
}

void RefBlock::backward_input(const MicroBatch& mb, const Tensor& dout, Tensor din) {
  const Partition& p = *part_;
  const int64_t s = p.model.seq_len, b = p.model.micro_batch, h = p.model.hidden;
  const int64_t n = p.tokens(), nl = p.local_tokens(), hl = p.local_hidden(), fl = p.local_ffn();
  check_host_tensor(dout, DType::F32, {p.local_seq(), b, h}, name_ + " backward: dout");
  check_host_tensor(din, DType::F32, {p.local_seq(), b, h}, name_ + " backward: din");
  weight_gradient_inputs_.require_free(mb.slot);
  BlockActivations a = saved_.take(mb.slot);
  recompute(a);
  BlockWeightGradientInputs kept;
  auto keep_layer_norm = [&](int k, const std::vector<float>& x, const std::vector<float>& mean,
                             const std::vector<float>& rstd, const float* dy) {
    kept.ln_input[k] = x;
    kept.ln_mean[k] = mean;
    kept.ln_rstd[k] = rstd;
    kept.ln_output_grad[k].assign(dy, dy + nl * h);
  };

  // Gradient of the residual stream on this rank's rows, first at the block output (`din` may be
  // `dout`).
  std::vector<float> dresidual(dout.as<float>(), dout.as<float>() + nl * h);
  std::vector<float> whole, dwhole, dlocal;  // gathered activations and gradients

  // MLP half. The forward all-reduce is an identity for the gradient: every rank has all of it
  // (under sequence parallelism its conjugate gathers the rows). Under fp16 each linear layer's
  // output gradient is rounded before its GEMMs read it: where a loss scale is too large, this is
  // where the gradients overflow. The row-parallel bias takes this rank's rows' gradient.
  std::vector<float> dbranch = dresidual;
  apply_dropout(dbranch.data(), p.model, mb, mlp_dropout_site(layer_), p.first_position(), p.local_seq());
  p.to_working(dbranch.data(), nl * h);
  kept.fc2_bias_grad_rows = dbranch;
  std::vector<float> dgelu = zeros(n * fl), dfc1 = zeros(n * fl), dln = zeros(n * h);
  linear_backward_input_of(kFc2Site, dgelu.data(), *fc2_weight_, row_parallel_output_grad(p, dbranch, dwhole),
                           a.gelu.data(), a.fp8_input_scale[kFc2], n, fl, h, mb, kept);
  gelu_backward(dfc1.data(), a.fc1.data(), dgelu.data(), n * fl);
  p.to_working(dfc1.data(), n * fl);
  linear_backward_input_of(kFc1Site, dln.data(), *fc1_weight_, dfc1.data(), column_parallel_input(p, a.ln2, whole),
                           a.fp8_input_scale[kFc1], n, h, fl, mb, kept);
  const float* dln2 = column_parallel_input_grad(p, dln, dlocal);
  keep_layer_norm(1, a.residual, a.ln2_mean, a.ln2_rstd, dln2);
  layer_norm_backward_input(dresidual.data(), dln2, a.residual.data(), ln2_weight_->value(), a.ln2_mean.data(),
                            a.ln2_rstd.data(), nl, h);

  // Attention half.
  dbranch = dresidual;
  apply_dropout(dbranch.data(), p.model, mb, attention_dropout_site(layer_), p.first_position(), p.local_seq());
  p.to_working(dbranch.data(), nl * h);
  kept.proj_bias_grad_rows = dbranch;
  std::vector<float> dattn = zeros(n * hl), dqkv = zeros(n * 3 * hl);
  linear_backward_input_of(kProjSite, dattn.data(), *proj_weight_, row_parallel_output_grad(p, dbranch, dwhole),
                           a.attn.data(), a.fp8_input_scale[kProj], n, hl, h, mb, kept);
  attention_backward(dqkv.data(), dattn.data(), a.qkv.data(), a.probs.data(),
                     AttentionShape{s, b, p.local_heads(), p.head_dim()});
  p.to_working(dqkv.data(), n * 3 * hl);
  linear_backward_input_of(kQkvSite, dln.data(), *qkv_weight_, dqkv.data(), column_parallel_input(p, a.ln1, whole),
                           a.fp8_input_scale[kQkv], n, h, 3 * hl, mb, kept);
  const float* dln1 = column_parallel_input_grad(p, dln, dlocal);
  keep_layer_norm(0, a.x, a.ln1_mean, a.ln1_rstd, dln1);
  layer_norm_backward_input(dresidual.data(), dln1, a.x.data(), ln1_weight_->value(), a.ln1_mean.data(),
                            a.ln1_rstd.data(), nl, h);

  p.to_working(dresidual.data(), nl * h);
  std::copy(dresidual.begin(), dresidual.end(), din.as<float>());
  weight_gradient_inputs_.put(mb.slot, std::move(kept));
}

void RefBlock::backward_weight(const MicroBatch& mb) {
  const Partition& p = *part_;
  const int64_t h = p.model.hidden, n = p.tokens(), nl = p.local_tokens(), hl = p.local_hidden(), fl = p.local_ffn();
  const BlockWeightGradientInputs kept = weight_gradient_inputs_.take(mb.slot);
  // Every gradient below adds to its accumulator; on the step's first backward the accumulators
  // hold stale values (MicroBatch::first_gradient), so they start from zero.
  if (mb.first_gradient)
    for (const ParamRef& param : parameters()) std::fill_n(param.grad.as<float>(), param.grad.numel(), 0.0f);
  add_bias_gradient(fc2_bias_->grad(), kept.fc2_bias_grad_rows.data(), nl, h);
  linear_backward_weight_of(kFc2Site, *fc2_weight_, nullptr, n, fl, h, kept);
  linear_backward_weight_of(kFc1Site, *fc1_weight_, fc1_bias_->grad(), n, h, fl, kept);
  layer_norm_backward_weight(ln2_weight_->grad(), ln2_bias_->grad(), kept.ln_output_grad[1].data(),
                             kept.ln_input[1].data(), kept.ln_mean[1].data(), kept.ln_rstd[1].data(), nl, h);
  add_bias_gradient(proj_bias_->grad(), kept.proj_bias_grad_rows.data(), nl, h);
  linear_backward_weight_of(kProjSite, *proj_weight_, nullptr, n, hl, h, kept);
  linear_backward_weight_of(kQkvSite, *qkv_weight_, qkv_bias_->grad(), n, h, 3 * hl, kept);
  layer_norm_backward_weight(ln1_weight_->grad(), ln1_bias_->grad(), kept.ln_output_grad[0].data(),
                             kept.ln_input[0].data(), kept.ln_mean[0].data(), kept.ln_rstd[0].data(), nl, h);
}

void RefBlock::release(int slot) {
  saved_.release(slot);
  weight_gradient_inputs_.release(slot);
}

}  // namespace ptdp::kref
