#include "attention_unfused.hpp"

#include <cmath>

#include "softmax.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

UnfusedAttention::UnfusedAttention(const AttentionShape& shape, Gemm& gemm, const KernelContext& ctx)
    : shape_(shape), gemm_(gemm), ctx_(ctx), scale_(1.0f / std::sqrt(float(shape.head_dim))) {}

// In cuBLAS's column-major terms a head's q (likewise k, v, ctx) is a head_dim x s matrix whose
// columns are tokens, `ld` apart; heads are head_dim apart, samples one token row apart. A
// scores matrix stored row-major [query][key] is key x query column-major.
std::shared_ptr<void> UnfusedAttention::forward(const act_t* qkv, act_t* ctx, bool save) {
  const int64_t s = shape_.seq, b = shape_.batch, heads = shape_.heads, d = shape_.head_dim, w = shape_.width();
  const int64_t ld_qkv = b * 3 * w, ld_ctx = b * w, matrix = s * s;
  auto probs = allocate_buffer<act_t>(*ctx_.arena, size_t(b * heads * matrix));
  for (int64_t j = 0; j < b; ++j) {
    const act_t* q = qkv + j * 3 * w;
    const act_t* k = q + w;
    // scores[i][key] = q_i . k_key: (key x query) = K^T Q.
    gemm_.batched(true, false, s, s, d, k, ld_qkv, d, q, ld_qkv, d, probs.get() + j * heads * matrix, s, matrix,
                  heads);
  }
  scaled_causal_softmax_forward(probs.get(), probs.get(), b * heads, int(s), int(s), scale_, ctx_);
  for (int64_t j = 0; j < b; ++j) {
    const act_t* v = qkv + j * 3 * w + 2 * w;
    // ctx_i = sum_key p[i][key] v_key: (d x query) = V (d x key) * P (key x query).
    gemm_.batched(false, false, d, s, s, v, ld_qkv, d, probs.get() + j * heads * matrix, s, matrix, ctx + j * w,
                  ld_ctx, d, heads);
  }
  return save ? probs.block : nullptr;
}

void UnfusedAttention::backward(const act_t* qkv, const act_t*, const act_t* dctx, const void* saved, act_t* dqkv) {
  const int64_t s = shape_.seq, b = shape_.batch, heads = shape_.heads, d = shape_.head_dim, w = shape_.width();
  const int64_t ld_qkv = b * 3 * w, ld_ctx = b * w, matrix = s * s;
  const act_t* probs = static_cast<const act_t*>(saved);
  auto grad = allocate_buffer<act_t>(*ctx_.arena, size_t(b * heads * matrix));
  for (int64_t j = 0; j < b; ++j) {
    const act_t* v = qkv + j * 3 * w + 2 * w;
    const act_t* dc = dctx + j * w;
    const act_t* p = probs + j * heads * matrix;
    act_t* dv = dqkv + j * 3 * w + 2 * w;
    // dp[i][key] = dctx_i . v_key: (key x query) = V^T dCtx.
    gemm_.batched(true, false, s, s, d, v, ld_qkv, d, dc, ld_ctx, d, grad.get() + j * heads * matrix, s, matrix,
                  heads);
    // dv_key = sum_i p[i][key] dctx_i: (d x key) = dCtx (d x query) * P^T (query x key).
    gemm_.batched(false, true, d, s, s, dc, ld_ctx, d, p, s, matrix, dv, ld_qkv, d, heads);
  }
  scaled_softmax_backward(probs, grad.get(), grad.get(), b * heads, int(s), int(s), scale_, true, ctx_);
  for (int64_t j = 0; j < b; ++j) {
    const act_t* q = qkv + j * 3 * w;
    const act_t* k = q + w;
    const act_t* ds = grad.get() + j * heads * matrix;
    // dq_i = sum_key ds[i][key] k_key: (d x query) = K (d x key) * dS (key x query).
    gemm_.batched(false, false, d, s, s, k, ld_qkv, d, ds, s, matrix, dqkv + j * 3 * w, ld_qkv, d, heads);
    // dk_key = sum_i ds[i][key] q_i: (d x key) = Q (d x query) * dS^T (query x key).
    gemm_.batched(false, true, d, s, s, q, ld_qkv, d, ds, s, matrix, dqkv + j * 3 * w + w, ld_qkv, d, heads);
  }
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
