#include "layer_norm.hpp"

#include <cooperative_groups.h>

#include <algorithm>

#include "column_reduce.hpp"
#include "layer_norm_row.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
namespace {

constexpr int kWarpsPerBlock = kLayerNormWarpsPerBlock;

template <int VEC>
__global__ void layer_norm_forward_kernel(const bf16* __restrict__ x, const float* __restrict__ gamma,
                                          const float* __restrict__ beta, bf16* __restrict__ y,
                                          float* __restrict__ mean_out, float* __restrict__ rstd_out, int64_t rows,
                                          int64_t cols, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const RowStats stats = layer_norm_row<VEC>(x + r * cols, gamma, beta, y + r * cols, cols, eps, lane);
  if (lane == 0) {
    if (mean_out) mean_out[r] = stats.mean;
    if (rstd_out) rstd_out[r] = stats.rstd;
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

// The whole backward in one launch. Each block takes a contiguous chunk of rows, one row at a
// time across all its threads (thread t owns GROUPS vectors of VEC columns, the same ones in
// every row, so its share of gamma stays in registers); it writes dx and keeps its columns'
// dgamma and dbeta sums in registers. Every block then stores its sums, and after a grid-wide
// barrier the grid adds them up column by column, in block order.
template <int VEC, int GROUPS>
__global__ void layer_norm_backward_fused_kernel(const bf16* dy, const bf16* __restrict__ x,
                                                 const float* __restrict__ gamma, const float* __restrict__ mean,
                                                 const float* __restrict__ rstd, const bf16* residual_grad, bf16* dx,
                                                 float* __restrict__ dgamma, float* __restrict__ dbeta, int64_t rows,
                                                 int64_t cols, float* __restrict__ partials) {
  __shared__ float reduce[2][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, warps = blockDim.x / 32;
  const int64_t per_block = (rows + gridDim.x - 1) / gridDim.x;
  const int64_t begin = int64_t(blockIdx.x) * per_block, end = min(rows, begin + per_block);
  int64_t col[GROUPS];
  float g[GROUPS][VEC], acc_gamma[GROUPS][VEC] = {}, acc_beta[GROUPS][VEC] = {};
#pragma unroll
  for (int q = 0; q < GROUPS; ++q) {
    col[q] = (int64_t(q) * blockDim.x + threadIdx.x) * VEC;
    if (col[q] < cols) load_vec<VEC>(gamma + col[q], g[q]);
  }
  for (int64_t r = begin; r < end; ++r) {
    const float mu = mean[r], rs = rstd[r];
    float xhat[GROUPS][VEC], d[GROUPS][VEC];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int q = 0; q < GROUPS; ++q) {
      if (col[q] >= cols) continue;
      load_vec<VEC>(x + r * cols + col[q], xhat[q]);
      load_vec<VEC>(dy + r * cols + col[q], d[q]);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        xhat[q][k] = (xhat[q][k] - mu) * rs;
        const float dg = d[q][k] * g[q][k];
        sum_g += dg;
        sum_gx += dg * xhat[q][k];
        acc_gamma[q][k] += d[q][k] * xhat[q][k];
        acc_beta[q][k] += d[q][k];
      }
    }
    // The row's two sums over the block: warps, then the first warp over the warps.
    sum_g = warp_sum(sum_g);
    sum_gx = warp_sum(sum_gx);
    if (lane == 0) reduce[0][warp] = sum_g, reduce[1][warp] = sum_gx;
    __syncthreads();
    if (warp == 0) {
      sum_g = lane < warps ? reduce[0][lane] : 0.0f;
      sum_gx = lane < warps ? reduce[1][lane] : 0.0f;
      sum_g = warp_sum(sum_g);
      sum_gx = warp_sum(sum_gx);
      if (lane == 0) reduce[0][0] = sum_g, reduce[1][0] = sum_gx;
    }
    __syncthreads();
    const float mean_g = reduce[0][0] / float(cols), mean_gx = reduce[1][0] / float(cols);
    // Every thread has read its row before the sums are overwritten by the next row's.
    __syncthreads();
#pragma unroll
    for (int q = 0; q < GROUPS; ++q) {
      if (col[q] >= cols) continue;
      float out[VEC];
      if (residual_grad) {
        load_vec<VEC>(residual_grad + r * cols + col[q], out);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) out[k] = 0.0f;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) out[k] += rs * (d[q][k] * g[q][k] - mean_g - xhat[q][k] * mean_gx);
      // Only this thread read these elements of dy and residual_grad, so dx may be either.
      store_vec<VEC>(dx + r * cols + col[q], out);
    }
  }
#pragma unroll
  for (int q = 0; q < GROUPS; ++q) {
    if (col[q] >= cols) continue;
    store_vec<VEC>(partials + int64_t(blockIdx.x) * cols + col[q], acc_gamma[q]);
    store_vec<VEC>(partials + (int64_t(gridDim.x) + blockIdx.x) * cols + col[q], acc_beta[q]);
  }
  cooperative_groups::this_grid().sync();
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float sum_gamma = 0.0f, sum_beta = 0.0f;
    for (unsigned b = 0; b < gridDim.x; ++b) {
      sum_gamma += partials[int64_t(b) * cols + c];
      sum_beta += partials[(int64_t(gridDim.x) + b) * cols + c];
    }
    dgamma[c] += sum_gamma;
    dbeta[c] += sum_beta;
  }
}

// Launches the one-kernel backward; false when this device or width cannot take it.
template <int VEC, int GROUPS>
bool launch_fused_backward(const bf16* dy, const bf16* x, const float* gamma, const float* mean, const float* rstd,
                           const bf16* residual_grad, bf16* dx, float* dgamma, float* dbeta, int64_t rows,
                           int64_t cols, const KernelContext& ctx) {
  const int64_t vectors = cols / VEC;
  const int threads = int(std::min<int64_t>(1024, (vectors + GROUPS - 1) / GROUPS + 31) / 32 * 32);
  auto kernel = layer_norm_backward_fused_kernel<VEC, GROUPS>;
  int device = 0, cooperative = 0, per_sm = 0;
  PTDP_CALL(cudaGetDevice(&device));
  PTDP_CALL(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  PTDP_CALL(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  if (!cooperative || per_sm < 1) return false;
  // Every block must be resident for the barrier; a few per multiprocessor hide the latency of
  // the per-row sums, more would only add partial sums to add up.
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(rows, int64_t(ctx.sm_count) * std::min(per_sm, 4)));
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(2) * size_t(blocks) * size_t(cols));
  float* partial_sums = partials.get();
  void* args[] = {&dy, &x, &gamma, &mean, &rstd, &residual_grad, &dx, &dgamma, &dbeta, &rows, &cols, &partial_sums};
  PTDP_CALL(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kernel), dim3(unsigned(blocks)),
                                        dim3(unsigned(threads)), args, 0, ctx.stream));
  return true;
}

bool fused_backward(const bf16* dy, const bf16* x, const float* gamma, const float* mean, const float* rstd,
                    const bf16* residual_grad, bf16* dx, float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                    const KernelContext& ctx) {
  const int vec = row_vector_width(cols);
  const int64_t vectors = cols / vec;
  if (vec == 8 && vectors <= 1024)
    return launch_fused_backward<8, 1>(dy, x, gamma, mean, rstd, residual_grad, dx, dgamma, dbeta, rows, cols, ctx);
  if (vec == 8 && vectors <= 2048)
    return launch_fused_backward<8, 2>(dy, x, gamma, mean, rstd, residual_grad, dx, dgamma, dbeta, rows, cols, ctx);
  if (vec == 1 && vectors <= 1024)
    return launch_fused_backward<1, 1>(dy, x, gamma, mean, rstd, residual_grad, dx, dgamma, dbeta, rows, cols, ctx);
  if (vec == 1 && vectors <= 2048)
    return launch_fused_backward<1, 2>(dy, x, gamma, mean, rstd, residual_grad, dx, dgamma, dbeta, rows, cols, ctx);
  return false;
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
  if (ctx.fused_layer_norm_backward &&
      fused_backward(dy, x, gamma, mean, rstd, residual_grad, dx, dgamma, dbeta, rows, cols, ctx))
    return;
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
