#pragma once
// Vocab-parallel cross entropy over act_t logits [rows, cols], where this rank holds the vocabulary
// columns [vocab_begin, vocab_begin + cols) and only the first `valid_cols` of them are real
// tokens (the rest pad the vocabulary to a multiple of the group size and never count).
//
// Per row the group needs three numbers: the max logit, the sum of exp(logit - max) and the
// target's logit. Each rank computes its own (cross_entropy_row_stats), the group combines them
// (max all-reduce, cross_entropy_rescale, sum all-reduce of the last two), and every rank then has
// the same loss and writes its own columns' gradient.
#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// stats: fp32 [3][rows]: max, sum of exp(logit - max), target logit (0 when the target is not in
// this shard). targets: global token ids.
void cross_entropy_row_stats(const act_t* logits, const int32_t* targets, int64_t rows, int64_t cols,
                             int64_t vocab_begin, int64_t valid_cols, float* stats, const KernelContext& ctx);

// In place, on a vocabulary that is not split (tensor-parallel size 1): the stats of
// cross_entropy_row_stats (vocab_begin 0), and logits become what cross_entropy_backward writes,
// scale * (softmax - onehot(target)). One kernel, each row read twice but the second time mostly
// from L2, where the two passes read the logits from memory twice; the one-pass path of the
// plugin option one_pass_cross_entropy.
void cross_entropy_stats_and_gradient(act_t* logits, const int32_t* targets, int64_t rows, int64_t cols,
                                      int64_t valid_cols, float scale, float* stats, const KernelContext& ctx);

// After the group's max all-reduce into group_max: sum *= exp(local max - group max); the max row
// of stats becomes group_max.
void cross_entropy_rescale(float* stats, const float* group_max, int64_t rows, const KernelContext& ctx);

// loss[0] = mean over rows of log(sum) + max - target logit.
void cross_entropy_loss(const float* stats, int64_t rows, float* loss, const KernelContext& ctx);

// In place: logits become scale * (softmax - onehot(target)) for real columns, 0 for padding.
void cross_entropy_backward(act_t* logits, const int32_t* targets, const float* stats, int64_t rows, int64_t cols,
                            int64_t vocab_begin, int64_t valid_cols, float scale, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
