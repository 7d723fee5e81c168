#pragma once
// Causal multi-head self-attention over this rank's heads, on the output of the column-parallel
// QKV GEMM. Token rows are [s, b] (position-major); each row of `qkv` is [q | k | v], each of
// them [heads, head_dim]. Per (sequence, head) the scores and the weighted sum are GEMMs on
// strided views of those rows.
#include <cstdint>

namespace ptdp::kref {

struct AttentionShape {
  int64_t seq = 0;
  int64_t batch = 0;
  int64_t heads = 0;  // on this rank
  int64_t head_dim = 0;

  int64_t width() const { return heads * head_dim; }  // of each of q, k, v and the output
};

// y: [s, b, heads * head_dim]; probs: [b, heads, s, s], the softmax kept for the backward
// (zero above the diagonal).
void attention_forward(float* y, float* probs, const float* qkv, const AttentionShape& shape);

// dqkv: [s, b, 3 * heads * head_dim], overwritten.
void attention_backward(float* dqkv, const float* dy, const float* qkv, const float* probs,
                        const AttentionShape& shape);

}  // namespace ptdp::kref
