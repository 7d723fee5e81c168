#include "embedding_layer.hpp"

#include <string>

#include "bias_dropout_add.hpp"
#include "embedding.hpp"
#include "ptdp/checked_call_cuda.hpp"
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
  TensorParallelRows& rows = backend_->rows();
  const int64_t n = rows.tokens(), local = rows.local_tokens();
  backend_->expect(tokens, DType::I32, MemoryKind::Host, {m.seq_len, m.micro_batch}, "embedding forward: tokens");
  backend_->expect(out, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden},
                   "embedding forward: out");
  check_token_ids(tokens, m.vocab, "embedding forward: tokens");
  if (save) saved_.require_free(mb.slot);
  backend_->activate();
  backend_->note_layer_forward();
  const KernelContext& k = backend_->kernel_context();

  auto ids = allocate_buffer<int32_t>(backend_->arena(), size_t(n));
  backend_->upload().copy(ids.get(), tokens.data, size_t(n) * sizeof(int32_t));
  const DropoutSite dropout = backend_->dropout_site(mb, 0);
  act_t* y = out.as<act_t>();
  if (backend_->tp_size() == 1) {
    embedding_forward(ids.get(), word_->master(), vocab_begin_, vocab_rows_, position_->master(), y, n, m.hidden,
                      m.micro_batch, dropout, k);
  } else {
    // Position and dropout come after the sum over the group, so that they are applied once; under
    // sequence parallelism the sum is reduce-scattered (the vocab-parallel lookup is a row-parallel
    // output) and they are applied to this rank's rows, from its first position on.
    DeviceBuffer<act_t> partial, summed;
    act_t* lookup = rows.sequence_parallel() ? (partial = allocate_buffer<act_t>(backend_->arena(), size_t(n * m.hidden))).get() : y;
    embedding_forward(ids.get(), word_->master(), vocab_begin_, vocab_rows_, nullptr, lookup, n, m.hidden,
                      m.micro_batch, dropout, k);
    const act_t* sum = rows.row_parallel_output(lookup, summed, m.hidden);
    if (sum != y)
      PTDP_CALL(cudaMemcpyAsync(y, sum, size_t(local * m.hidden) * sizeof(act_t), cudaMemcpyDeviceToDevice,
                                backend_->stream()));
    embedding_add_position(y, position_->master() + rows.first_position() * m.hidden, local, m.hidden, m.micro_batch,
                           dropout, k);
  }

  if (save) {
    const int32_t* ids_on_host = tokens.as<const int32_t>();
    saved_.put(mb.slot, Saved{std::vector<int32_t>(ids_on_host, ids_on_host + n)});
  }
}

void FusedEmbedding::backward(const MicroBatch& mb, const Tensor& dout) {
  const ModelSpec& m = backend_->model();
  TensorParallelRows& rows = backend_->rows();
  backend_->expect(dout, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden},
                   "embedding backward: dout");
  const Saved s = saved_.take(mb.slot);
  backend_->activate();
  const KernelContext& k = backend_->kernel_context();
  const int64_t n = rows.tokens(), local = rows.local_tokens();
  const TokenRows grouped = group_rows_by_token(s.tokens.data(), n, vocab_begin_, vocab_rows_);
  auto token_rows = allocate_buffer<int32_t>(backend_->arena(), grouped.packed.size());
  backend_->upload().copy(token_rows.get(), grouped.packed.data(), grouped.packed.size() * sizeof(int32_t));
  const DropoutSite dropout = backend_->dropout_site(mb, 0);
  if (!rows.sequence_parallel()) {
    embedding_backward(dout.as<const act_t>(), n, m.hidden, m.micro_batch, dropout, position_->grad(),
                       view_token_rows(token_rows.get(), grouped.unique), word_->grad(), k);
    return;
  }
  // This rank's rows: their dropout's gradient and their positions' share of the position
  // gradient; then the word embedding's, which every rank's vocabulary shard takes from all rows.
  DeviceBuffer<act_t> local_grad, whole;
  const act_t* g = dout.as<const act_t>();
  if (dropout.active()) {
    local_grad = allocate_buffer<act_t>(backend_->arena(), size_t(local * m.hidden));
    bias_dropout_add_backward(g, local_grad.get(), nullptr, local, m.hidden, dropout, k);
    g = local_grad.get();
  }
  DropoutSite none = dropout;
  none.p = 0.0f;
  embedding_backward(g, local, m.hidden, m.micro_batch, none, position_->grad() + rows.first_position() * m.hidden,
                     TokenRowsView{}, nullptr, k);
  embedding_backward(rows.row_parallel_output_grad(g, whole, m.hidden), n, m.hidden, m.micro_batch, none, nullptr,
                     view_token_rows(token_rows.get(), grouped.unique), word_->grad(), k);
}

void FusedEmbedding::release(int slot) { saved_.release(slot); }

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
