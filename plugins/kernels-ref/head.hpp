#pragma once
// Final LayerNorm, logits from the word embedding (vocab-parallel: each rank computes the
// logits of its vocab rows) and the cross entropy of those logits, averaged over the s*b tokens.
#include <memory>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "parameter.hpp"
#include "partition.hpp"
#include "ptdp/saved_slots.hpp"

namespace ptdp::kref {

// s' is this rank's rows of the sequence (s/t under sequence parallelism, else s).
struct HeadActivations {
  std::vector<float> x;                  // [s', b, h] head input
  std::vector<float> ln;                 // [s, b, h] the final LayerNorm's output, all rows
  std::vector<float> mean, rstd;         // [s', b] its statistics on this rank's rows
  std::vector<float> logits;             // [s, b, padded_vocab / t] this rank's columns
  std::vector<float> logsumexp;          // [s, b] over the whole vocabulary
  std::vector<int32_t> targets;          // [s, b]
};

class RefHead final : public HeadLayer {
 public:
  // word: the tied embedding's word matrix, shared with it; null to own a copy.
  RefHead(std::shared_ptr<const Partition> partition, std::shared_ptr<Parameter> word);

  std::vector<ParamRef> parameters() override;
  void forward(const MicroBatch& mb, const Tensor& in, const Tensor& targets, Tensor loss,
               bool save) override;
  void backward(const MicroBatch& mb, float loss_scale, Tensor din) override;
  void release(int slot) override;
  void logits(const MicroBatch& mb, const Tensor& in, Tensor logits) override;

 private:
  // The final LayerNorm of this rank's rows x (statistics into mean and rstd), rounded to the
  // working type, and under sequence parallelism all-gathered: the logits GEMM's input, all rows.
  std::vector<float> norm(const float* x, float* mean, float* rstd) const;

  std::shared_ptr<const Partition> part_;
  std::shared_ptr<Parameter> ln_weight_, ln_bias_;
  std::shared_ptr<Parameter> word_;
  bool owns_word_;
  SavedSlots<HeadActivations> saved_;
};

}  // namespace ptdp::kref
