#include "residual_layer_norm.hpp"

#include "bias_dropout_add.cuh"
#include "fp8_transpose.hpp"
#include "layer_norm_fp8.cuh"
#include "layer_norm_row.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/error.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

// One warp per row, as layer_norm.cu: each lane writes its columns of the sum, then reads the
// same columns back in layer_norm_row, so no other thread's write needs to be seen.
template <int VEC, bool DROPOUT>
__global__ void bias_dropout_add_layer_norm_kernel(const act_t* x, const float* __restrict__ bias, const act_t* residual,
                                                   act_t* out, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, act_t* __restrict__ y,
                                                   float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                   int64_t rows, int64_t cols, float eps, DropoutSite dropout) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kLayerNormWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC)
    bias_dropout_add_vector<VEC, DROPOUT>(x, bias, residual, out, r, c, cols, dropout);
  const RowStats stats = layer_norm_row<VEC>(out + r * cols, gamma, beta, y + r * cols, nullptr, cols, eps, lane);
  store_row_stats(stats, r, lane, mean_out, rstd_out);
}

// The row held in registers (layer_norm_row.cuh): the sum is rounded to bf16 as it is written, and
// normalized from those registers. Rows: ActRows or, for an FP8 output, Fp8Rows.
template <int N, bool DROPOUT, class Rows>
__global__ void bias_dropout_add_layer_norm_held_kernel(const act_t* x, const float* __restrict__ bias,
                                                        const act_t* residual, act_t* out,
                                                        const float* __restrict__ gamma,
                                                        const float* __restrict__ beta, Rows y,
                                                        float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                        int64_t rows, float eps, DropoutSite dropout) {
  constexpr int64_t cols = 256 * N;
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kLayerNormWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  HeldRow<N> row;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int64_t c = int64_t(lane) * 8 + int64_t(i) * 256;
    float v[8];
    bias_dropout_add_values<8, DROPOUT>(x, bias, residual, r, c, cols, dropout, v);
    row.raw[i] = pack_act8(v);
    *reinterpret_cast<uint4*>(out + r * cols + c) = row.raw[i];
  }
  const RowStats stats = y.template normalize<N>(row, r, gamma, beta, eps, lane);
  store_row_stats(stats, r, lane, mean_out, rstd_out);
}

template <bool DROPOUT>
void launch(const act_t* x, const float* bias, const act_t* residual, act_t* out, const float* gamma, const float* beta,
            act_t* y, float* mean, float* rstd, int64_t rows, int64_t cols, float eps, const DropoutSite& dropout,
            const KernelContext& ctx) {
  const unsigned blocks = blocks_for(rows, kLayerNormWarpsPerBlock);
  const int threads = kLayerNormWarpsPerBlock * 32;
  const bool held = dispatch_held_row(cols, [&](auto n) {
    bias_dropout_add_layer_norm_held_kernel<decltype(n)::value, DROPOUT, ActRows><<<blocks, threads, 0, ctx.stream>>>(
        x, bias, residual, out, gamma, beta, ActRows{y}, mean, rstd, rows, eps, dropout);
  });
  if (!held && row_vector_width(cols) == 8)
    bias_dropout_add_layer_norm_kernel<8, DROPOUT><<<blocks, threads, 0, ctx.stream>>>(
        x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout);
  else if (!held)
    bias_dropout_add_layer_norm_kernel<1, DROPOUT><<<blocks, threads, 0, ctx.stream>>>(
        x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout);
  PTDP_LAUNCH_CHECK(bias_dropout_add_layer_norm_kernel);
}

}  // namespace

void bias_dropout_add_layer_norm_forward(const act_t* x, const float* bias, const act_t* residual, act_t* out,
                                         const float* gamma, const float* beta, act_t* y, float* mean, float* rstd,
                                         int64_t rows, int64_t cols, float eps, const DropoutSite& dropout,
                                         const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  if (dropout.active())
    launch<true>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
  else
    launch<false>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
}

void bias_dropout_add_layer_norm_forward_fp8(const act_t* x, const float* bias, const act_t* residual, act_t* out,
                                             const float* gamma, const float* beta, const LayerNormFp8Out& y,
                                             float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                             const DropoutSite& dropout, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  if (!layer_norm_fp8_fits(rows, cols))
    throw Error("kernels-fused: residual add + LayerNorm with an FP8 output over " + std::to_string(rows) + " x " +
                std::to_string(cols) + " (rows a multiple of 16, columns a multiple of 256 up to 4096)");
  const unsigned blocks = blocks_for(rows, kLayerNormWarpsPerBlock);
  const int threads = kLayerNormWarpsPerBlock * 32;
  dispatch_held_row(cols, [&](auto n) {
    if (dropout.active())
      bias_dropout_add_layer_norm_held_kernel<decltype(n)::value, true, Fp8Rows><<<blocks, threads, 0, ctx.stream>>>(
          x, bias, residual, out, gamma, beta, Fp8Rows{y}, mean, rstd, rows, eps, dropout);
    else
      bias_dropout_add_layer_norm_held_kernel<decltype(n)::value, false, Fp8Rows><<<blocks, threads, 0, ctx.stream>>>(
          x, bias, residual, out, gamma, beta, Fp8Rows{y}, mean, rstd, rows, eps, dropout);
  });
  PTDP_LAUNCH_CHECK(bias_dropout_add_layer_norm_held_kernel<Fp8Rows>);
  if (y.out_t) fp8_transpose(y.out, rows, cols, y.out_t, ctx);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
