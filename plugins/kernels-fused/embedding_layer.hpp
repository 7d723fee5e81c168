#pragma once
// The vocab-parallel token embedding plus the learned position embedding, with the embedding
// dropout (site 0). This rank holds rows [rank * V/t, (rank + 1) * V/t) of the padded vocabulary;
// rows of other ranks' tokens are zero here and the group's all-reduce fills them in.
#include <memory>
#include <vector>

#include "backend.hpp"
#include "ptdp/saved_slots.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class FusedEmbedding final : public EmbeddingLayer {
 public:
  explicit FusedEmbedding(std::shared_ptr<Backend> backend);

  std::vector<ParamRef> parameters() override;
  void forward(const MicroBatch& mb, const Tensor& tokens, Tensor out, bool save) override;
  void backward(const MicroBatch& mb, const Tensor& dout) override;
  void release(int slot) override;

  const Backend* backend() const { return backend_.get(); }
  // The word matrix, shared with a tied head.
  std::shared_ptr<Parameter> word() const { return word_; }

 private:
  // The token ids, kept on the host: backward groups its rows by token there. Grouping in
  // forward left the GPU idle (0.64 ms a step for the 1.3B model on the H200) while the host
  // sorted; in backward the host is far ahead of the GPU and the sort is hidden.
  struct Saved {
    std::vector<int32_t> tokens;
  };

  std::shared_ptr<Backend> backend_;
  std::shared_ptr<Parameter> word_, position_;
  int64_t vocab_rows_ = 0, vocab_begin_ = 0;
  SavedSlots<Saved> saved_{"kernels-fused: embedding"};
};

// Token ids from the host, checked against the vocabulary (ids outside it would read past the
// tables). `what` names the argument in the message.
void check_token_ids(const Tensor& ids, int vocab, const char* what);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
