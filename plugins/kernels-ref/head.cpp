#include "head.hpp"

#include <algorithm>

#include "layer_norm.hpp"
#include "linear.hpp"
#include "tensor_checks.hpp"
#include "vocab_parallel_cross_entropy.hpp"

namespace ptdp::kref {

RefHead::RefHead(std::shared_ptr<const Partition> partition, std::shared_ptr<Parameter> word)
    : part_(std::move(partition)), word_(std::move(word)), owns_word_(word_ == nullptr), saved_("kernels-ref: head") {
  const ModelSpec& m = part_->model;
  const auto norm = gpt_head_norm(m.hidden);
  ln_weight_ = make_parameter(norm[0], *part_);
  ln_bias_ = make_parameter(norm[1], *part_);
  if (owns_word_) word_ = make_parameter(gpt_word_embedding(m.padded_vocab, m.hidden, part_->size, part_->rank), *part_);
}

std::vector<ParamRef> RefHead::parameters() {
  std::vector<ParamRef> refs{ln_weight_->ref, ln_bias_->ref};
  // A shared word matrix is listed (and updated) by the embedding layer that owns it.
  if (owns_word_) refs.push_back(word_->ref);
  return refs;
}

void RefHead::forward(const MicroBatch& mb, const Tensor& in, const Tensor& targets, Tensor loss,
                      bool save) {
  const Partition& p = *part_;
  const int64_t s = p.model.seq_len, b = p.model.micro_batch, h = p.model.hidden;
  const int64_t n = p.tokens(), nl = p.local_tokens(), vl = p.local_vocab();
  check_host_tensor(in, DType::F32, {p.local_seq(), b, h}, "head forward: in");
  check_host_tensor(targets, DType::I32, {s, b}, "head forward: targets");
  check_host_tensor(loss, DType::F32, {1}, "head forward: loss");
  check_token_ids(targets.as<int32_t>(), s, b, p.model.vocab, "head forward: target");
  if (save) saved_.require_free(mb.slot);

  HeadActivations a;
  a.x.assign(in.as<float>(), in.as<float>() + nl * h);
  a.targets.assign(targets.as<int32_t>(), targets.as<int32_t>() + n);
  a.mean.assign(nl, 0.0f);
  a.rstd.assign(nl, 0.0f);
  a.ln = norm(a.x.data(), a.mean.data(), a.rstd.data());  // the logits GEMM's input, saved for its weight gradient
  a.logits.assign(n * vl, 0.0f);
  std::vector<float> word;
  linear_forward(a.logits.data(), a.ln.data(), p.working_weights(word_->value(), vl * h, word), nullptr, n, h, vl);
  a.logsumexp.assign(n, 0.0f);
  std::vector<float> losses(n);
  vocab_parallel_cross_entropy_forward(losses.data(), a.logsumexp.data(), a.logits.data(),
                                       a.targets.data(), n, p);
  double sum = 0.0;
  for (float l : losses) sum += l;
  *loss.as<float>() = static_cast<float>(sum / n);

  if (save) saved_.put(mb.slot, std::move(a));
}

void RefHead::backward(const MicroBatch& mb, float loss_scale, Tensor din) {
  const Partition& p = *part_;
  const int64_t b = p.model.micro_batch, h = p.model.hidden;
  const int64_t n = p.tokens(), nl = p.local_tokens(), vl = p.local_vocab();
  check_host_tensor(din, DType::F32, {p.local_seq(), b, h}, "head backward: din");
  HeadActivations a = saved_.take(mb.slot);

  // The loss is the mean over the n tokens.
  std::vector<float> dlogits(n * vl);
  vocab_parallel_cross_entropy_backward(dlogits.data(), a.logits.data(), a.logsumexp.data(),
                                        a.targets.data(), loss_scale / static_cast<float>(n), n, p);
  // Under fp16 the scaled loss's gradient is the first value rounded to half in the backward.
  p.to_working(dlogits.data(), n * vl);
  std::vector<float> dln(n * h), dx(nl * h, 0.0f), dln_rows(p.regions.sequence_parallel() ? nl * h : 0), word;
  linear_backward(dln.data(), word_->grad(), nullptr, dlogits.data(), a.ln.data(),
                  p.working_weights(word_->value(), vl * h, word), n, h, vl);
  // The logits GEMM is column-parallel (by vocabulary): its input gradient's partial sums are
  // all-reduced, or reduce-scattered to this rank's rows under sequence parallelism.
  const float* dnorm = p.regions.column_parallel_input_grad(host_view(dln.data(), n * h), host_view(dln_rows.data(), int64_t(dln_rows.size())))
                           .as<float>();
  layer_norm_backward(dx.data(), ln_weight_->grad(), ln_bias_->grad(), dnorm, a.x.data(),
                      ln_weight_->value(), a.mean.data(), a.rstd.data(), nl, h);
  p.to_working(dx.data(), nl * h);
  std::copy(dx.begin(), dx.end(), din.as<float>());
}

std::vector<float> RefHead::norm(const float* x, float* mean, float* rstd) const {
  const Partition& p = *part_;
  const int64_t nl = p.local_tokens(), h = p.model.hidden;
  std::vector<float> rows(nl * h), whole(p.regions.sequence_parallel() ? p.tokens() * h : 0);
  layer_norm_forward(rows.data(), mean, rstd, x, ln_weight_->value(), ln_bias_->value(), nl, h, p.model.layernorm_eps);
  p.to_working(rows.data(), nl * h);
  if (!p.regions.sequence_parallel()) return rows;
  p.regions.column_parallel_input(host_view(rows.data(), nl * h), host_view(whole.data(), p.tokens() * h));
  return whole;
}

void RefHead::release(int slot) { saved_.release(slot); }

void RefHead::logits(const MicroBatch&, const Tensor& in, Tensor logits) {
  const Partition& p = *part_;
  const int64_t s = p.model.seq_len, b = p.model.micro_batch, h = p.model.hidden;
  const int64_t n = p.tokens(), nl = p.local_tokens(), vl = p.local_vocab();
  check_host_tensor(in, DType::F32, {p.local_seq(), b, h}, "head logits: in");
  check_host_tensor(logits, DType::F32, {s, b, vl}, "head logits: logits");
  std::vector<float> mean(nl), rstd(nl);
  const std::vector<float> ln = norm(in.as<float>(), mean.data(), rstd.data());
  std::vector<float> word;
  linear_forward(logits.as<float>(), ln.data(), p.working_weights(word_->value(), vl * h, word), nullptr, n, h, vl);
}

}  // namespace ptdp::kref
