#include "layer_norm.hpp"

#include "column_reduce.hpp"
#include "cuda_check.hpp"
#include "vec.cuh"

namespace ptdp::fused {
namespace {

constexpr int kWarpsPerBlock = 8;

// One warp per row. The row is read up to three times; after the first pass it comes from cache.
template <int VEC>
__global__ void layer_norm_forward_kernel(const bf16* __restrict__ x, const float* __restrict__ gamma,
                                          const float* __restrict__ beta, bf16* __restrict__ y,
                                          float* __restrict__ mean_out, float* __restrict__ rstd_out, int64_t rows,
                                          int64_t cols, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const bf16* xr = x + r * cols;
  float sum = 0.0f;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC];
    load_vec<VEC>(xr + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sum += v[k];
  }
  const float mean = warp_sum(sum) / float(cols);
  float sq = 0.0f;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC];
    load_vec<VEC>(xr + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sq += (v[k] - mean) * (v[k] - mean);
  }
  const float rstd = rsqrtf(warp_sum(sq) / float(cols) + eps);
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC], g[VEC], b[VEC];
    load_vec<VEC>(xr + c, v);
    load_vec<VEC>(gamma + c, g);
    load_vec<VEC>(beta + c, b);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = (v[k] - mean) * rstd * g[k] + b[k];
    store_vec<VEC>(y + r * cols + c, v);
  }
  if (lane == 0) {
    if (mean_out) mean_out[r] = mean;
    if (rstd_out) rstd_out[r] = rstd;
  }
}

template <int VEC>
__global__ void layer_norm_input_grad_kernel(const bf16* dy, const bf16* __restrict__ x,
                                             const float* __restrict__ gamma, const float* __restrict__ mean,
                                             const float* __restrict__ rstd, const bf16* residual_grad, bf16* dx,
                                             int64_t rows, int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const float mu = mean[r], rs = rstd[r];
  const bf16* xr = x + r * cols;
  const bf16* dyr = dy + r * cols;
  // dx = rstd * (dy*g - mean(dy*g) - xhat * mean(dy*g*xhat))
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC], d[VEC], g[VEC];
    load_vec<VEC>(xr + c, v);
    load_vec<VEC>(dyr + c, d);
    load_vec<VEC>(gamma + c, g);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float dg = d[k] * g[k];
      sum_g += dg;
      sum_gx += dg * (v[k] - mu) * rs;
    }
  }
  const float mean_g = warp_sum(sum_g) / float(cols);
  const float mean_gx = warp_sum(sum_gx) / float(cols);
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC], d[VEC], g[VEC], res[VEC];
    load_vec<VEC>(xr + c, v);
    load_vec<VEC>(dyr + c, d);
    load_vec<VEC>(gamma + c, g);
    if (residual_grad) {
      load_vec<VEC>(residual_grad + r * cols + c, res);
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) res[k] = 0.0f;
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float xhat = (v[k] - mu) * rs;
      d[k] = res[k] + rs * (d[k] * g[k] - mean_g - xhat * mean_gx);
    }
    store_vec<VEC>(dx + r * cols + c, d);
  }
}

// Column sums of dy * xhat and dy, into partials [2][chunks][cols].
template <int VEC>
__global__ void layer_norm_param_grad_kernel(const bf16* __restrict__ dy, const bf16* __restrict__ x,
                                             const float* __restrict__ mean, const float* __restrict__ rstd,
                                             int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                             float* __restrict__ partials) {
  const int64_t col = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  if (col >= cols) return;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc_gamma[VEC] = {}, acc_beta[VEC] = {};
  for (int64_t r = begin; r < end; ++r) {
    const float mu = mean[r], rs = rstd[r];
    float v[VEC], d[VEC];
    load_vec<VEC>(x + r * cols + col, v);
    load_vec<VEC>(dy + r * cols + col, d);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      acc_gamma[k] += d[k] * (v[k] - mu) * rs;
      acc_beta[k] += d[k];
    }
  }
  store_vec<VEC>(partials + int64_t(blockIdx.y) * cols + col, acc_gamma);
  store_vec<VEC>(partials + (int64_t(gridDim.y) + blockIdx.y) * cols + col, acc_beta);
}

}  // namespace

void layer_norm_forward(const bf16* x, const float* gamma, const float* beta, bf16* y, float* mean, float* rstd,
                        int64_t rows, int64_t cols, float eps, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const unsigned blocks = blocks_for(rows, kWarpsPerBlock);
  if (row_vector_width(cols) == 8)
    layer_norm_forward_kernel<8><<<blocks, kWarpsPerBlock * 32, 0, ctx.stream>>>(x, gamma, beta, y, mean, rstd, rows,
                                                                                 cols, eps);
  else
    layer_norm_forward_kernel<1><<<blocks, kWarpsPerBlock * 32, 0, ctx.stream>>>(x, gamma, beta, y, mean, rstd, rows,
                                                                                 cols, eps);
  PTDP_LAUNCH_CHECK(layer_norm_forward_kernel);
}

void layer_norm_backward(const bf16* dy, const bf16* x, const float* gamma, const float* mean, const float* rstd,
                         const bf16* residual_grad, bf16* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t cols, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const int vec = row_vector_width(cols);
  // Parameter gradients first: dx may overwrite dy.
  const ColumnTiling t = plan_column_tiling(rows, cols, vec, ctx.sm_count);
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(2) * t.chunks() * cols);
  if (vec == 8)
    layer_norm_param_grad_kernel<8><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(dy, x, mean, rstd, rows, cols,
                                                                                       t.rows_per_chunk, partials.get());
  else
    layer_norm_param_grad_kernel<1><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(dy, x, mean, rstd, rows, cols,
                                                                                       t.rows_per_chunk, partials.get());
  PTDP_LAUNCH_CHECK(layer_norm_param_grad_kernel);
  finish_column_sums(partials.get(), t.chunks(), cols, dgamma, ctx.stream);
  finish_column_sums(partials.get() + size_t(t.chunks()) * cols, t.chunks(), cols, dbeta, ctx.stream);

  const unsigned blocks = blocks_for(rows, kWarpsPerBlock);
  if (vec == 8)
    layer_norm_input_grad_kernel<8><<<blocks, kWarpsPerBlock * 32, 0, ctx.stream>>>(dy, x, gamma, mean, rstd,
                                                                                    residual_grad, dx, rows, cols);
  else
    layer_norm_input_grad_kernel<1><<<blocks, kWarpsPerBlock * 32, 0, ctx.stream>>>(dy, x, gamma, mean, rstd,
                                                                                    residual_grad, dx, rows, cols);
  PTDP_LAUNCH_CHECK(layer_norm_input_grad_kernel);
}

}  // namespace ptdp::fused
