#include "layer_norm.hpp"

#include <cooperative_groups.h>

#include <algorithm>

#include "column_reduce.hpp"
#include "fp8_transpose.hpp"
#include "layer_norm_fp8.cuh"
#include "layer_norm_row.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/error.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

constexpr int kWarpsPerBlock = kLayerNormWarpsPerBlock;

template <int VEC>
__global__ void layer_norm_forward_kernel(const act_t* __restrict__ x, const float* __restrict__ gamma,
                                          const float* __restrict__ beta, act_t* __restrict__ y,
                                          act_t* __restrict__ copy, float* __restrict__ mean_out,
                                          float* __restrict__ rstd_out, int64_t rows, int64_t cols, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const RowStats stats =
      layer_norm_row<VEC>(x + r * cols, gamma, beta, y + r * cols, copy ? copy + r * cols : nullptr, cols, eps, lane);
  store_row_stats(stats, r, lane, mean_out, rstd_out);
}

// The row held in registers (layer_norm_row.cuh): each lane issues all its loads of the row at
// once. Rows: ActRows or, for an FP8 output, Fp8Rows.
template <int N, class Rows>
__global__ void layer_norm_forward_held_kernel(const act_t* __restrict__ x, const float* __restrict__ gamma,
                                               const float* __restrict__ beta, Rows y, act_t* __restrict__ copy,
                                               float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                               int64_t rows, float eps) {
  constexpr int64_t cols = 256 * N;
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  HeldRow<N> row;
#pragma unroll
  for (int i = 0; i < N; ++i) row.raw[i] = *reinterpret_cast<const uint4*>(x + r * cols + lane * 8 + i * 256);
  if (copy) {
#pragma unroll
    for (int i = 0; i < N; ++i) *reinterpret_cast<uint4*>(copy + r * cols + lane * 8 + i * 256) = row.raw[i];
  }
  const RowStats stats = y.template normalize<N>(row, r, gamma, beta, eps, lane);
  store_row_stats(stats, r, lane, mean_out, rstd_out);
}

template <int VEC>
__global__ void layer_norm_input_grad_kernel(const act_t* dy, const act_t* __restrict__ x,
                                             const float* __restrict__ gamma, const float* __restrict__ mean,
                                             const float* __restrict__ rstd, const act_t* residual_grad, act_t* dx,
                                             int64_t rows, int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const float mu = mean[r], rs = rstd[r];
  const act_t* xr = x + r * cols;
  const act_t* dyr = dy + r * cols;
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
__global__ void layer_norm_param_grad_kernel(const act_t* __restrict__ dy, const act_t* __restrict__ x,
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

// What layer_norm_backward reads and writes, as the one-launch kernel takes it.
struct BackwardArgs {
  const act_t* dy;
  const act_t* x;
  const float* gamma;
  const float* mean;
  const float* rstd;
  const act_t* residual_grad;
  act_t* dx;
  float* dgamma;
  float* dbeta;
  float* residual_sum;
  int64_t rows, cols;
};

// The whole backward in one launch. Each block takes a contiguous chunk of rows, one row at a
// time across all its threads (thread t owns GROUPS vectors of VEC columns, the same ones in
// every row, so its share of gamma stays in registers); it writes dx and keeps its columns'
// dgamma and dbeta sums (and with RESIDUAL_SUM the residual gradient's) in registers. A thread
// holds kDepth rows' x, dy, residual gradient, mean and rstd: while the block works on one row,
// the loads of the next kDepth - 1 are in flight, so the row's barrier and sums do not leave the
// memory idle. Every block then stores its sums, and after a grid-wide barrier the grid adds them
// up column by column, in a fixed order.
template <int VEC, int GROUPS, bool RESIDUAL_SUM>
__global__ void layer_norm_backward_fused_kernel(BackwardArgs args, float* __restrict__ partials) {
  constexpr int kSums = RESIDUAL_SUM ? 3 : 2;
  // Three rows held fit the registers of two 256-thread blocks per multiprocessor; wider rows
  // (two vectors a thread) hold two.
  constexpr int kDepth = GROUPS == 1 ? 3 : 2;
  // The per-warp sums of a row, two rows' worth: a row's sums are written while the threads that
  // are behind may still read the previous row's, so one barrier per row suffices.
  __shared__ float reduce[2][2][32];
  const int64_t rows = args.rows, cols = args.cols;
  const act_t* __restrict__ x = args.x;
  const act_t* dy = args.dy;  // dx may be dy or the residual gradient
  const act_t* residual_grad = args.residual_grad;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, warps = blockDim.x / 32;
  const int64_t per_block = (rows + gridDim.x - 1) / gridDim.x;
  const int64_t begin = int64_t(blockIdx.x) * per_block, end = min(rows, begin + per_block);
  int64_t col[GROUPS];
  float g[GROUPS][VEC], acc[kSums][GROUPS][VEC] = {};
#pragma unroll
  for (int q = 0; q < GROUPS; ++q) {
    col[q] = (int64_t(q) * blockDim.x + threadIdx.x) * VEC;
    if (col[q] < cols) load_vec<VEC>(args.gamma + col[q], g[q]);
  }
  // This thread's elements of one row, as loaded, and the row's statistics.
  struct Row {
    ActVec<VEC> x[GROUPS], dy[GROUPS], res[GROUPS];
    float mean, rstd;
  };
  const auto load_row = [&](int64_t r, Row& row) {
    row.mean = args.mean[r];
    row.rstd = args.rstd[r];
#pragma unroll
    for (int q = 0; q < GROUPS; ++q) {
      if (col[q] >= cols) continue;
      row.x[q].load(x + r * cols + col[q]);
      row.dy[q].load(dy + r * cols + col[q]);
      if (residual_grad) row.res[q].load(residual_grad + r * cols + col[q]);
    }
  };
  // One row: its dx, and its share of the column sums.
  const auto backward_row = [&](int64_t r, const Row& row) {
    const float mu = row.mean, rs = row.rstd;
    float xhat[GROUPS][VEC], d[GROUPS][VEC];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int q = 0; q < GROUPS; ++q) {
      if (col[q] >= cols) continue;
      row.x[q].unpack(xhat[q]);
      row.dy[q].unpack(d[q]);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        xhat[q][k] = (xhat[q][k] - mu) * rs;
        const float dg = d[q][k] * g[q][k];
        sum_g += dg;
        sum_gx += dg * xhat[q][k];
        acc[0][q][k] += d[q][k] * xhat[q][k];
        acc[1][q][k] += d[q][k];
      }
    }
    // The row's two sums over the block: each warp's, then every thread adds the warps' in order.
    sum_g = warp_sum(sum_g);
    sum_gx = warp_sum(sum_gx);
    float(&sums)[2][32] = reduce[r & 1];
    if (lane == 0) sums[0][warp] = sum_g, sums[1][warp] = sum_gx;
    __syncthreads();
    sum_g = 0.0f, sum_gx = 0.0f;
    for (int w = 0; w < warps; ++w) sum_g += sums[0][w], sum_gx += sums[1][w];
    const float mean_g = sum_g / float(cols), mean_gx = sum_gx / float(cols);
#pragma unroll
    for (int q = 0; q < GROUPS; ++q) {
      if (col[q] >= cols) continue;
      float out[VEC];
      if (residual_grad) {
        row.res[q].unpack(out);
        if constexpr (RESIDUAL_SUM) {
#pragma unroll
          for (int k = 0; k < VEC; ++k) acc[kSums - 1][q][k] += out[k];
        }
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) out[k] = 0.0f;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) out[k] += rs * (d[q][k] * g[q][k] - mean_g - xhat[q][k] * mean_gx);
      // Only this thread read these elements of dy and residual_grad, so dx may be either.
      store_vec<VEC>(args.dx + r * cols + col[q], out);
    }
  };
  // held[i] holds rows begin + i, begin + i + kDepth, ...: the loop over i is unrolled, so each
  // stays in registers.
  Row held[kDepth];
#pragma unroll
  for (int i = 0; i < kDepth; ++i)
    if (begin + i < end) load_row(begin + i, held[i]);
  for (int64_t r0 = begin; r0 < end; r0 += kDepth) {
#pragma unroll
    for (int i = 0; i < kDepth; ++i) {
      const int64_t r = r0 + i;
      if (r >= end) break;
      backward_row(r, held[i]);
      if (r + kDepth < end) load_row(r + kDepth, held[i]);
    }
  }
  // partials: [kSums][blocks][cols].
#pragma unroll
  for (int s = 0; s < kSums; ++s)
#pragma unroll
    for (int q = 0; q < GROUPS; ++q)
      if (col[q] < cols) store_vec<VEC>(partials + (int64_t(s) * gridDim.x + blockIdx.x) * cols + col[q], acc[s][q]);
  cooperative_groups::this_grid().sync();
  // The sums over blocks, 32 columns of one sum per block at a time: lane l takes column l of the
  // tile, warp w the blocks w, w + warps, ...; then the first warp adds the warps' sums.
  __shared__ float tile_sums[32][32];
  float* const targets[3] = {args.dgamma, args.dbeta, args.residual_sum};
  const int64_t tiles = (cols + 31) / 32;
  for (int64_t t = blockIdx.x; t < kSums * tiles; t += gridDim.x) {
    const int64_t s = t / tiles, c = (t % tiles) * 32 + lane;
    const float* column = partials + (s * gridDim.x + warp) * cols + c;
    const int64_t terms = warp < int(gridDim.x) ? (int64_t(gridDim.x) - warp + warps - 1) / warps : 0;
    tile_sums[warp][lane] = c < cols ? strided_sum(column, terms, int64_t(warps) * cols) : 0.0f;
    __syncthreads();
    if (warp == 0 && c < cols) {
      float total = 0.0f;
      for (int w = 0; w < warps; ++w) total += tile_sums[w][lane];
      targets[s][c] += total;
    }
    __syncthreads();
  }
}

// Launches the one-kernel backward; false when this device or width cannot take it.
template <int VEC, int GROUPS, bool RESIDUAL_SUM>
bool launch_fused_backward(const BackwardArgs& args, const KernelContext& ctx) {
  constexpr int kSums = RESIDUAL_SUM ? 3 : 2;
  const int64_t vectors = args.cols / VEC;
  const int threads = int(std::min<int64_t>(1024, (vectors + GROUPS - 1) / GROUPS + 31) / 32 * 32);
  auto kernel = layer_norm_backward_fused_kernel<VEC, GROUPS, RESIDUAL_SUM>;
  int device = 0, cooperative = 0, per_sm = 0;
  PTDP_CALL(cudaGetDevice(&device));
  PTDP_CALL(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  PTDP_CALL(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  if (!cooperative || per_sm < 1) return false;
  // Every block must be resident for the barrier; a few per multiprocessor hide the latency of
  // the per-row sums, more would only add partial sums to add up.
  const int64_t blocks =
      std::max<int64_t>(1, std::min<int64_t>(args.rows, int64_t(ctx.sm_count) * std::min(per_sm, 4)));
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(kSums) * size_t(blocks) * size_t(args.cols));
  BackwardArgs kernel_args = args;
  float* partial_sums = partials.get();
  void* launch_args[] = {&kernel_args, &partial_sums};
  PTDP_CALL(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kernel), dim3(unsigned(blocks)),
                                        dim3(unsigned(threads)), launch_args, 0, ctx.stream));
  return true;
}

template <int VEC, int GROUPS>
bool launch_fused_backward(const BackwardArgs& args, const KernelContext& ctx) {
  if (args.residual_sum) return launch_fused_backward<VEC, GROUPS, true>(args, ctx);
  return launch_fused_backward<VEC, GROUPS, false>(args, ctx);
}

bool fused_backward(const BackwardArgs& args, const KernelContext& ctx) {
  const int vec = row_vector_width(args.cols);
  const int64_t vectors = args.cols / vec;
  if (vec == 8 && vectors <= 1024) return launch_fused_backward<8, 1>(args, ctx);
  if (vec == 8 && vectors <= 2048) return launch_fused_backward<8, 2>(args, ctx);
  if (vec == 1 && vectors <= 1024) return launch_fused_backward<1, 1>(args, ctx);
  if (vec == 1 && vectors <= 2048) return launch_fused_backward<1, 2>(args, ctx);
  return false;
}

}  // namespace

void layer_norm_forward(const act_t* x, const float* gamma, const float* beta, act_t* y, float* mean, float* rstd,
                        int64_t rows, int64_t cols, float eps, const KernelContext& ctx, act_t* copy) {
  if (rows == 0 || cols == 0) return;
  const unsigned blocks = blocks_for(rows, kWarpsPerBlock);
  const int threads = kWarpsPerBlock * 32;
  const bool held = dispatch_held_row(cols, [&](auto n) {
    layer_norm_forward_held_kernel<decltype(n)::value, ActRows>
        <<<blocks, threads, 0, ctx.stream>>>(x, gamma, beta, ActRows{y}, copy, mean, rstd, rows, eps);
  });
  if (!held && row_vector_width(cols) == 8)
    layer_norm_forward_kernel<8><<<blocks, threads, 0, ctx.stream>>>(x, gamma, beta, y, copy, mean, rstd, rows, cols,
                                                                     eps);
  else if (!held)
    layer_norm_forward_kernel<1><<<blocks, threads, 0, ctx.stream>>>(x, gamma, beta, y, copy, mean, rstd, rows, cols,
                                                                     eps);
  PTDP_LAUNCH_CHECK(layer_norm_forward_kernel);
}

bool layer_norm_fp8_fits(int64_t rows, int64_t cols) { return held_row_vectors(cols) > 0 && rows % 16 == 0; }

void layer_norm_forward_fp8(const act_t* x, const float* gamma, const float* beta, const LayerNormFp8Out& y,
                            float* mean, float* rstd, int64_t rows, int64_t cols, float eps, const KernelContext& ctx,
                            act_t* copy) {
  if (rows == 0 || cols == 0) return;
  if (!layer_norm_fp8_fits(rows, cols))
    throw Error("kernels-fused: LayerNorm with an FP8 output over " + std::to_string(rows) + " x " +
                std::to_string(cols) + " (rows a multiple of 16, columns a multiple of 256 up to 4096)");
  dispatch_held_row(cols, [&](auto n) {
    layer_norm_forward_held_kernel<decltype(n)::value, Fp8Rows><<<blocks_for(rows, kWarpsPerBlock), kWarpsPerBlock * 32,
                                                                  0, ctx.stream>>>(x, gamma, beta, Fp8Rows{y}, copy,
                                                                                   mean, rstd, rows, eps);
  });
  PTDP_LAUNCH_CHECK(layer_norm_forward_held_kernel<Fp8Rows>);
  if (y.out_t) fp8_transpose(y.out, rows, cols, y.out_t, ctx);
}

void layer_norm_backward(const act_t* dy, const act_t* x, const float* gamma, const float* mean, const float* rstd,
                         const act_t* residual_grad, act_t* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t cols, const KernelContext& ctx, float* residual_sum) {
  if (rows == 0 || cols == 0) return;
  if (!residual_grad) residual_sum = nullptr;
  if (ctx.fused_layer_norm_backward &&
      fused_backward({dy, x, gamma, mean, rstd, residual_grad, dx, dgamma, dbeta, residual_sum, rows, cols}, ctx))
    return;
  const int vec = row_vector_width(cols);
  // Parameter gradients and the residual's sums first: dx may overwrite dy or residual_grad.
  if (residual_sum) column_sum_accumulate(residual_grad, rows, cols, residual_sum, ctx);
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

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
