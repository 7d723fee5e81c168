#pragma once
// Cross entropy over logits split by vocabulary across the tensor-parallel group (Megatron):
// each rank holds the logits of its vocab columns; the row max, the sum of exponentials and the
// target's logit are combined with two all-reduces of n (and 2n) numbers, never the logits.
// Padding columns (global id >= vocab) take no part in the softmax and get zero gradient.
#include <cstdint>

#include "partition.hpp"

namespace ptdp::kref {

// logits: [n, local_vocab] of this rank's shard; targets: [n] global ids in [0, vocab).
// Writes each row's loss and its log-sum-exp over the whole vocabulary.
void vocab_parallel_cross_entropy_forward(float* losses, float* logsumexp, const float* logits,
                                          const int32_t* targets, int64_t n, const Partition& partition);

// dlogits = dloss * (softmax - onehot(target)) on this rank's columns, 0 on padding.
void vocab_parallel_cross_entropy_backward(float* dlogits, const float* logits, const float* logsumexp,
                                           const int32_t* targets, float dloss, int64_t n,
                                           const Partition& partition);

}  // namespace ptdp::kref
