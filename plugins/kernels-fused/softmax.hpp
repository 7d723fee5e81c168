#pragma once
// The paper's fused scale + mask + softmax over attention scores, in two variants: the causal mask
// applied implicitly (key j of query i is visible when j <= i; the upper triangle is never read)
// and a general mask given as bytes. Scores and probabilities are act_t, arithmetic fp32.
#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// scores, probs: [matrices, rows, cols] (probs may be scores). Hidden entries get probability 0.
void scaled_causal_softmax_forward(const act_t* scores, act_t* probs, int64_t matrices, int rows, int cols,
                                   float scale, const KernelContext& ctx);

// scores, probs: [batch, heads, rows, cols]; mask: [batch, rows, cols], shared by the heads, nonzero
// where a key is hidden. A row whose keys are all hidden gets probabilities 0.
void scaled_masked_softmax_forward(const act_t* scores, const uint8_t* mask, act_t* probs, int64_t batch,
                                   int heads, int rows, int cols, float scale, const KernelContext& ctx);

// Gradient with respect to the unscaled scores: dscores = scale * p * (dp - sum(p * dp)), per row.
// Holds for both masks (hidden entries have p = 0). With `causal`, the upper triangle of each
// [rows, cols] matrix is written as 0 without being read. dscores may be dprobs.
void scaled_softmax_backward(const act_t* probs, const act_t* dprobs, act_t* dscores, int64_t matrices, int rows,
                             int cols, float scale, bool causal, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
