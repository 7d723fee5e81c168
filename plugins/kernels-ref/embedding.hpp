#pragma once
// Vocab-parallel token embedding plus learned position embedding (replicated), then dropout.
// Each rank looks up only the ids of its vocab rows (others give zero) and an all-reduce
// completes the sum, so the word matrix is never gathered.
#include <memory>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "parameter.hpp"
#include "partition.hpp"
#include "ptdp/saved_slots.hpp"

namespace ptdp::kref {

class RefEmbedding final : public EmbeddingLayer {
 public:
  explicit RefEmbedding(std::shared_ptr<const Partition> partition);

  std::vector<ParamRef> parameters() override;
  void forward(const MicroBatch& mb, const Tensor& tokens, Tensor out, bool save) override;
  void backward(const MicroBatch& mb, const Tensor& dout) override;
  void release(int slot) override;

  // The word matrix (and its gradient) that a tied head on this rank shares.
  const std::shared_ptr<Parameter>& word() const { return word_; }
  const Partition* partition() const { return part_.get(); }

 private:
  std::shared_ptr<const Partition> part_;
  std::shared_ptr<Parameter> word_;      // "embedding.word" [padded_vocab, h], rows split
  std::shared_ptr<Parameter> position_;  // "embedding.position" [s, h], whole
  SavedSlots<std::vector<int32_t>> saved_tokens_;
};

}  // namespace ptdp::kref
