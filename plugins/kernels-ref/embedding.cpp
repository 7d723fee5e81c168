#include "embedding.hpp"

#include <algorithm>
#include <cstring>

#include "dropout.hpp"
#include "tensor_checks.hpp"

namespace ptdp::kref {

RefEmbedding::RefEmbedding(std::shared_ptr<const Partition> partition)
    : part_(std::move(partition)), saved_tokens_("kernels-ref: embedding") {
  const ModelSpec& m = part_->model;
  word_ = make_parameter(gpt_word_embedding(m.padded_vocab, m.hidden, part_->size, part_->rank), *part_);
  position_ = make_parameter(gpt_position_embedding(m.seq_len, m.hidden), *part_);
}

std::vector<ParamRef> RefEmbedding::parameters() { return {word_->ref, position_->ref}; }

void RefEmbedding::forward(const MicroBatch& mb, const Tensor& tokens, Tensor out, bool save) {
  const ModelSpec& m = part_->model;
  const int64_t s = m.seq_len, b = m.micro_batch, h = m.hidden;
  check_host_tensor(tokens, DType::I32, {s, b}, "embedding forward: tokens");
  check_host_tensor(out, DType::F32, {s, b, h}, "embedding forward: out");
  const int32_t* ids = tokens.as<int32_t>();
  check_token_ids(ids, s, b, m.vocab, "embedding forward: token");
  if (save) saved_tokens_.require_free(mb.slot);

  std::vector<float> x(static_cast<size_t>(s * b * h), 0.0f);
  const int64_t begin = part_->vocab_begin(), rows = part_->local_vocab();
  const float* word = word_->value();
  for (int64_t n = 0; n < s * b; ++n) {
    const int64_t row = ids[n] - begin;
    if (row >= 0 && row < rows) std::memcpy(&x[n * h], word + row * h, sizeof(float) * h);
  }
  part_->all_reduce(x.data(), s * b * h, ReduceOp::Sum);
  const float* pos_emb = position_->value();
  for (int64_t pos = 0; pos < s; ++pos)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t f = 0; f < h; ++f) x[(pos * b + j) * h + f] += pos_emb[pos * h + f];
  apply_dropout(x.data(), m, mb, embedding_dropout_site());
  part_->to_working(x.data(), s * b * h);  // the first activation between layers
  std::copy(x.begin(), x.end(), out.as<float>());

  if (save) saved_tokens_.put(mb.slot, std::vector<int32_t>(ids, ids + s * b));
}

void RefEmbedding::backward(const MicroBatch& mb, const Tensor& dout) {
  const ModelSpec& m = part_->model;
  const int64_t s = m.seq_len, b = m.micro_batch, h = m.hidden;
  check_host_tensor(dout, DType::F32, {s, b, h}, "embedding backward: dout");
  std::vector<int32_t> ids = saved_tokens_.take(mb.slot);

  std::vector<float> d(dout.as<float>(), dout.as<float>() + s * b * h);
  apply_dropout(d.data(), m, mb, embedding_dropout_site());
  float* dpos = position_->grad();
  float* dword = word_->grad();
  const int64_t begin = part_->vocab_begin(), rows = part_->local_vocab();
  for (int64_t pos = 0; pos < s; ++pos) {
    for (int64_t j = 0; j < b; ++j) {
      const int64_t n = pos * b + j;
      const float* dn = &d[n * h];
      for (int64_t f = 0; f < h; ++f) dpos[pos * h + f] += dn[f];
      const int64_t row = ids[n] - begin;
      if (row >= 0 && row < rows)
        for (int64_t f = 0; f < h; ++f) dword[row * h + f] += dn[f];
    }
  }
}

void RefEmbedding::release(int slot) { saved_tokens_.release(slot); }

}  // namespace ptdp::kref
