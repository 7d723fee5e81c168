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
  const Partition& p = *part_;
  const ModelSpec& m = p.model;
  const int64_t s = m.seq_len, b = m.micro_batch, h = m.hidden, nl = p.local_tokens();
  check_host_tensor(tokens, DType::I32, {s, b}, "embedding forward: tokens");
  check_host_tensor(out, DType::F32, {p.local_seq(), b, h}, "embedding forward: out");
  const int32_t* ids = tokens.as<int32_t>();
  check_token_ids(ids, s, b, m.vocab, "embedding forward: token");
  if (save) saved_tokens_.require_free(mb.slot);

  std::vector<float> x(static_cast<size_t>(s * b * h), 0.0f), rows(static_cast<size_t>(p.regions.sequence_parallel() ? nl * h : 0));
  const int64_t begin = p.vocab_begin(), vocab_rows = p.local_vocab();
  const float* word = word_->value();
  for (int64_t n = 0; n < s * b; ++n) {
    const int64_t row = ids[n] - begin;
    if (row >= 0 && row < vocab_rows) std::memcpy(&x[n * h], word + row * h, sizeof(float) * h);
  }
  // The vocab-parallel lookup's partial rows are summed over the group: all-reduced, or under
  // sequence parallelism reduce-scattered to this rank's positions.
  float* y = p.regions.row_parallel_output(host_view(x.data(), s * b * h), host_view(rows.data(), int64_t(rows.size()))).as<float>();
  const float* pos_emb = position_->value() + p.first_position() * h;
  for (int64_t pos = 0; pos < p.local_seq(); ++pos)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t f = 0; f < h; ++f) y[(pos * b + j) * h + f] += pos_emb[pos * h + f];
  apply_dropout(y, m, mb, embedding_dropout_site(), p.first_position(), p.local_seq());
  p.to_working(y, nl * h);  // the first activation between layers
  std::copy(y, y + nl * h, out.as<float>());

  if (save) saved_tokens_.put(mb.slot, std::vector<int32_t>(ids, ids + s * b));
}

void RefEmbedding::backward(const MicroBatch& mb, const Tensor& dout) {
  const Partition& p = *part_;
  const ModelSpec& m = p.model;
  const int64_t s = m.seq_len, b = m.micro_batch, h = m.hidden, nl = p.local_tokens();
  check_host_tensor(dout, DType::F32, {p.local_seq(), b, h}, "embedding backward: dout");
  std::vector<int32_t> ids = saved_tokens_.take(mb.slot);

  std::vector<float> d(dout.as<float>(), dout.as<float>() + nl * h), whole(static_cast<size_t>(p.regions.sequence_parallel() ? s * b * h : 0));
  apply_dropout(d.data(), m, mb, embedding_dropout_site(), p.first_position(), p.local_seq());
  // The position embedding takes this rank's positions (under sequence parallelism the core sums
  // the ranks' shares); the word rows take every token, gathered.
  float* dpos = position_->grad() + p.first_position() * h;
  for (int64_t pos = 0; pos < p.local_seq(); ++pos)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t f = 0; f < h; ++f) dpos[pos * h + f] += d[(pos * b + j) * h + f];
  const float* dall = p.regions.row_parallel_output_grad(host_view(d.data(), nl * h), host_view(whole.data(), int64_t(whole.size()))).as<float>();
  float* dword = word_->grad();
  const int64_t begin = p.vocab_begin(), rows = p.local_vocab();
  for (int64_t n = 0; n < s * b; ++n) {
    const int64_t row = ids[n] - begin;
    if (row >= 0 && row < rows)
      for (int64_t f = 0; f < h; ++f) dword[row * h + f] += dall[n * h + f];
  }
}

void RefEmbedding::release(int slot) { saved_tokens_.release(slot); }

}  // namespace ptdp::kref
