#pragma once
// The model's head: final LayerNorm, logits against this rank's rows of the (tied) word matrix,
// and vocab-parallel cross entropy, whose loss is the mean over the microbatch's s * b tokens.
#include <memory>

#include "backend.hpp"
#include "ptdp/saved_slots.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class FusedHead final : public HeadLayer {
 public:
  // word: the embedding's word matrix when tied, or null to own a copy.
  FusedHead(std::shared_ptr<Backend> backend, std::shared_ptr<Parameter> word);

  std::vector<ParamRef> parameters() override;
  void forward(const MicroBatch& mb, const Tensor& in, const Tensor& targets, Tensor loss, bool save) override;
  void backward(const MicroBatch& mb, float loss_scale, Tensor din) override;
  void release(int slot) override;
  void logits(const MicroBatch& mb, const Tensor& in, Tensor logits) override;

 private:
  struct Activations;

  std::shared_ptr<Backend> backend_;
  std::shared_ptr<Parameter> ln_weight_, ln_bias_, word_;
  bool owns_word_ = false;
  int64_t vocab_rows_ = 0, vocab_begin_ = 0, valid_cols_ = 0;
  SavedSlots<std::shared_ptr<Activations>> saved_{"kernels-fused: head"};
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
