#pragma once
// The paper's attention: for each sample, one strided-batched GEMM over the heads gives the scores
// (the [s, b, ...] layout makes every head's q, k and v a strided matrix, so nothing is
// transposed or copied), the fused scale + causal softmax turns them into probabilities (kept for
// backward), and a second strided-batched GEMM applies them to v.
#include "attention.hpp"
#include "gemm.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class UnfusedAttention final : public Attention {
 public:
  UnfusedAttention(const AttentionShape& shape, Gemm& gemm, const KernelContext& ctx);
  std::string name() const override { return "unfused"; }
  std::shared_ptr<void> forward(const act_t* qkv, act_t* ctx, bool save) override;
  void backward(const act_t* qkv, const act_t* ctx, const act_t* dctx, const void* saved, act_t* dqkv) override;

 private:
  AttentionShape shape_;
  Gemm& gemm_;
  KernelContext ctx_;
  float scale_;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
