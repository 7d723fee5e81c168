#include "residual_layer_norm.hpp"

#include "bias_dropout_add.cuh"
#include "layer_norm_row.cuh"
#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
namespace {

// One warp per row, as layer_norm.cu: each lane writes its columns of the sum, then reads the
// same columns back in layer_norm_row, so no other thread's write needs to be seen.
template <int VEC, bool DROPOUT>
__global__ void bias_dropout_add_layer_norm_kernel(const bf16* x, const float* __restrict__ bias, const bf16* residual,
                                                   bf16* out, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, bf16* __restrict__ y,
                                                   float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                   int64_t rows, int64_t cols, float eps, DropoutSite dropout) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kLayerNormWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC)
    bias_dropout_add_vector<VEC, DROPOUT>(x, bias, residual, out, r, c, cols, dropout);
  const RowStats stats = layer_norm_row<VEC>(out + r * cols, gamma, beta, y + r * cols, cols, eps, lane);
  if (lane == 0) {
    if (mean_out) mean_out[r] = stats.mean;
    if (rstd_out) rstd_out[r] = stats.rstd;
  }
}

template <int VEC, bool DROPOUT>
void launch(const bf16* x, const float* bias, const bf16* residual, bf16* out, const float* gamma, const float* beta,
            bf16* y, float* mean, float* rstd, int64_t rows, int64_t cols, float eps, const DropoutSite& dropout,
            const KernelContext& ctx) {
  bias_dropout_add_layer_norm_kernel<VEC, DROPOUT>
      <<<blocks_for(rows, kLayerNormWarpsPerBlock), kLayerNormWarpsPerBlock * 32, 0, ctx.stream>>>(
          x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout);
  PTDP_LAUNCH_CHECK(bias_dropout_add_layer_norm_kernel);
}

}  // namespace

void bias_dropout_add_layer_norm_forward(const bf16* x, const float* bias, const bf16* residual, bf16* out,
                                         const float* gamma, const float* beta, bf16* y, float* mean, float* rstd,
                                         int64_t rows, int64_t cols, float eps, const DropoutSite& dropout,
                                         const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const bool vec8 = row_vector_width(cols) == 8;
  if (dropout.active()) {
    if (vec8) launch<8, true>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
    else launch<1, true>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
  } else {
    if (vec8) launch<8, false>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
    else launch<1, false>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
  }
}

}  // namespace ptdp::fused
