#include "embedding_layer.hpp"

#include <string>

#include "embedding.hpp"
#include "token_rows.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

void check_token_ids(const Tensor& ids, int vocab, const char* what) {
  const int32_t* data = ids.as<const int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (data[i] < 0 || data[i] >= vocab)
      throw Error(std::string("kernels-fused: ") + what + " holds token id " + std::to_string(data[i]) +
                  " at position " + std::to_string(i / ids.shape[1]) + ", sample " + std::to_string(i % ids.shape[1]) +
                  "; ids must be in [0, " + std::to_string(vocab) + ")");
  }
}

FusedEmbedding::FusedEmbedding(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {
  const ModelSpec& m = backend_->model();
  vocab_rows_ = m.padded_vocab / backend_->tp_size();
  vocab_begin_ = vocab_rows_ * backend_->tp_rank();
  word_ = backend_->make_parameter(
      spec_of(gpt_word_embedding(m.padded_vocab, m.hidden, backend_->tp_size(), backend_->tp_rank()), true, true));
  position_ = backend_->make_parameter(spec_of(gpt_position_embedding(m.seq_len, m.hidden), false, true));
}

std::vector<ParamRef> FusedEmbedding::parameters() { return {word_->ref(), position_->ref()}; }

void FusedEmbedding::forward(const MicroBatch& mb, const Tensor& tokens, Tensor out, bool save) {
  const ModelSpec& m = backend_->model();
  const int64_t rows = int64_t(m.seq_len) * m.micro_batch;
  backend_->expect(tokens, DType::I32, MemoryKind::Host, {m.seq_len, m.micro_batch}, "embedding forward: tokens");
  backend_->expect(out, kActDType, MemoryKind::Cuda, {m.seq_len, m.micro_batch, m.hidden}, "embedding forward: out");
  check_token_ids(tokens, m.vocab, "embedding forward: tokens");
  if (save) saved_.require_free(mb.slot);
  backend_->activate();
  const KernelContext& k = backend_->kernel_context();

  auto ids = allocate_buffer<int32_t>(backend_->arena(), size_t(rows));
  backend_->upload().copy(ids.get(), tokens.data, size_t(rows) * sizeof(int32_t));
  const DropoutSite dropout = backend_->dropout_site(mb, 0);
  act_t* y = out.as<act_t>();
  if (backend_->tp_size() == 1) {
    embedding_forward(ids.get(), word_->master(), vocab_begin_, vocab_rows_, position_->master(), y, rows, m.hidden,
                      m.micro_batch, dropout, k);
  } else {
    // Position and dropout come after the sum over the group, so that they are applied once.
    embedding_forward(ids.get(), word_->master(), vocab_begin_, vocab_rows_, nullptr, y, rows, m.hidden,
                      m.micro_batch, dropout, k);
    backend_->all_reduce(y, kActDType, rows * m.hidden);
    embedding_add_position(y, position_->master(), rows, m.hidden, m.micro_batch, dropout, k);
  }

  if (save) {
    const int32_t* ids_on_host = tokens.as<const int32_t>();
    saved_.put(mb.slot, Saved{std::vector<int32_t>(ids_on_host, ids_on_host + rows)});
  }
}

void FusedEmbedding::backward(const MicroBatch& mb, const Tensor& dout) {
  const ModelSpec& m = backend_->model();
  backend_->expect(dout, kActDType, MemoryKind::Cuda, {m.seq_len, m.micro_batch, m.hidden},
                   "embedding backward: dout");
  const Saved s = saved_.take(mb.slot);
  backend_->activate();
  const int64_t rows = int64_t(m.seq_len) * m.micro_batch;
  const TokenRows grouped = group_rows_by_token(s.tokens.data(), rows, vocab_begin_, vocab_rows_);
  auto token_rows = allocate_buffer<int32_t>(backend_->arena(), grouped.packed.size());
  backend_->upload().copy(token_rows.get(), grouped.packed.data(), grouped.packed.size() * sizeof(int32_t));
  embedding_backward(dout.as<const act_t>(), rows, m.hidden, m.micro_batch, backend_->dropout_site(mb, 0),
                     position_->grad(), view_token_rows(token_rows.get(), grouped.unique), word_->grad(),
                     backend_->kernel_context());
}

void FusedEmbedding::release(int slot) { saved_.release(slot); }

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
