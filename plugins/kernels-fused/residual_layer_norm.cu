#include "residual_layer_norm.hpp"

#include "bias_dropout_add.cuh"
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

// Row r of the sum residual + dropout(x + bias) into the lanes' registers (HeldRow's order),
// rounded to bf16 as it is written to `out`, so that it is normalized from what was stored.
template <bool DROPOUT>
struct ResidualSumRow {
  const act_t* x;
  const float* __restrict__ bias;
  const act_t* residual;
  act_t* out;
  DropoutSite dropout;
  template <int N>
  __device__ __forceinline__ void operator()(int64_t r, int lane, HeldRow<N>& row) const {
    constexpr int64_t cols = 256 * N;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int64_t c = int64_t(lane) * 8 + int64_t(i) * 256;
      float v[8];
      bias_dropout_add_values<8, DROPOUT>(x, bias, residual, r, c, cols, dropout, v);
      row.raw[i] = pack_act8(v);
      *reinterpret_cast<uint4*>(out + r * cols + c) = row.raw[i];
    }
  }
};

// The row held in registers (layer_norm_row.cuh).
template <int N, bool DROPOUT>
__global__ void bias_dropout_add_layer_norm_held_kernel(const act_t* x, const float* __restrict__ bias,
                                                        const act_t* residual, act_t* out,
                                                        const float* __restrict__ gamma,
                                                        const float* __restrict__ beta, act_t* __restrict__ y,
                                                        float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                        int64_t rows, float eps, DropoutSite dropout) {
  constexpr int64_t cols = 256 * N;
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kLayerNormWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  HeldRow<N> row;
  ResidualSumRow<DROPOUT>{x, bias, residual, out, dropout}(r, lane, row);
  const RowStats stats = layer_norm_held_row<N>(row, gamma, beta, ActRowStore{y + r * cols}, cols, eps, lane);
  store_row_stats(stats, r, lane, mean_out, rstd_out);
}

// The same with LayerNorm's output in FP8 (layer_norm_fp8.cuh): kFp8LayerNormRows rows a block.
template <int N, bool DROPOUT>
__global__ void __launch_bounds__(kFp8LayerNormWarps * 32)
    bias_dropout_add_layer_norm_fp8_kernel(const act_t* x, const float* __restrict__ bias, const act_t* residual,
                                           act_t* out, const float* __restrict__ gamma, const float* __restrict__ beta,
                                           LayerNormFp8Out y, float* __restrict__ mean_out,
                                           float* __restrict__ rstd_out, int64_t rows, float eps,
                                           DropoutSite dropout) {
  layer_norm_fp8_rows<N>(ResidualSumRow<DROPOUT>{x, bias, residual, out, dropout}, gamma, beta, y, mean_out, rstd_out,
                         rows, eps);
}

template <bool DROPOUT>
void launch_fp8(const act_t* x, const float* bias, const act_t* residual, act_t* out, const float* gamma,
                const float* beta, const LayerNormFp8Out& y, float* mean, float* rstd, int64_t rows, int64_t cols,
                float eps, const DropoutSite& dropout, const KernelContext& ctx) {
  launch_fp8_layer_norm(
      rows, cols, ctx.stream, [](auto n) { return bias_dropout_add_layer_norm_fp8_kernel<decltype(n)::value, DROPOUT>; },
      x, bias, residual, out, gamma, beta, y, mean, rstd, rows, eps, dropout);
  PTDP_LAUNCH_CHECK(bias_dropout_add_layer_norm_fp8_kernel);
}

template <bool DROPOUT>
void launch(const act_t* x, const float* bias, const act_t* residual, act_t* out, const float* gamma, const float* beta,
            act_t* y, float* mean, float* rstd, int64_t rows, int64_t cols, float eps, const DropoutSite& dropout,
            const KernelContext& ctx) {
  const unsigned blocks = blocks_for(rows, kLayerNormWarpsPerBlock);
  const int threads = kLayerNormWarpsPerBlock * 32;
  const bool held = dispatch_held_row(cols, [&](auto n) {
    bias_dropout_add_layer_norm_held_kernel<decltype(n)::value, DROPOUT><<<blocks, threads, 0, ctx.stream>>>(
        x, bias, residual, out, gamma, beta, y, mean, rstd, rows, eps, dropout);
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
  if (dropout.active())
    launch_fp8<true>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
  else
    launch_fp8<false>(x, bias, residual, out, gamma, beta, y, mean, rstd, rows, cols, eps, dropout, ctx);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
