#include "cross_entropy.hpp"

#include <algorithm>
#include <cfloat>

#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
namespace {

constexpr int kThreads = 512;

// Online max and sum of exponentials: merging keeps both relative to the larger max.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -FLT_MAX) return {m, 0.0f};
  return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

__device__ __forceinline__ void accumulate(MaxSum& acc, float x) {
  if (x > acc.max) {
    acc.sum = acc.sum * __expf(acc.max - x) + 1.0f;
    acc.max = x;
  } else {
    acc.sum += __expf(x - acc.max);
  }
}

template <int VEC>
__global__ void cross_entropy_row_stats_kernel(const bf16* __restrict__ logits, const int32_t* __restrict__ targets, int64_t rows,
                                 int64_t cols, int64_t vocab_begin, int64_t valid_cols, float* __restrict__ stats) {
  __shared__ MaxSum shared[kThreads / 32];
  const int64_t r = blockIdx.x;
  const bf16* row = logits + r * cols;
  MaxSum acc{-FLT_MAX, 0.0f};
  const int64_t vec_end = valid_cols / VEC * VEC;
  for (int64_t c = int64_t(threadIdx.x) * VEC; c < vec_end; c += int64_t(blockDim.x) * VEC) {
    float v[VEC];
    load_vec<VEC>(row + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) accumulate(acc, v[k]);
  }
  for (int64_t c = vec_end + threadIdx.x; c < valid_cols; c += blockDim.x) accumulate(acc, __bfloat162float(row[c]));
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, acc.max, offset), __shfl_xor_sync(0xffffffffu, acc.sum, offset)};
    acc = merge(acc, other);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  if (lane == 0) shared[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    MaxSum total = shared[0];
    for (int w = 1; w < int(blockDim.x / 32); ++w) total = merge(total, shared[w]);
    const int64_t local = int64_t(targets[r]) - vocab_begin;
    stats[r] = total.max;
    stats[rows + r] = total.sum;
    stats[2 * rows + r] = local >= 0 && local < valid_cols ? __bfloat162float(row[local]) : 0.0f;
  }
}

__global__ void cross_entropy_rescale_kernel(float* __restrict__ stats, const float* __restrict__ group_max, int64_t rows) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float local = stats[r], global = group_max[r];
  stats[rows + r] = local == -FLT_MAX ? 0.0f : stats[rows + r] * __expf(local - global);
  stats[r] = global;
}

// One block; every thread sums a fixed stride of rows, then a fixed tree: the same sum every run.
__global__ void cross_entropy_loss_kernel(const float* __restrict__ stats, int64_t rows, float* __restrict__ loss) {
  __shared__ double shared[kThreads];
  double sum = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    sum += double(logf(stats[rows + r]) + stats[r] - stats[2 * rows + r]);
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width >>= 1) {
    if (int(threadIdx.x) < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = float(shared[0] / double(rows));
}

template <int VEC>
__global__ void cross_entropy_backward_kernel(bf16* logits, const int32_t* __restrict__ targets, const float* __restrict__ stats,
                                int64_t rows, int64_t cols, int64_t vocab_begin, int64_t valid_cols, float scale) {
  const int64_t vecs_per_row = cols / VEC;
  const int64_t total = rows * vecs_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / vecs_per_row;
    const int64_t c0 = (i - r * vecs_per_row) * VEC;
    const float row_max = stats[r], inv_sum = 1.0f / stats[rows + r];
    const int64_t target = int64_t(targets[r]) - vocab_begin;
    float v[VEC];
    load_vec<VEC>(logits + r * cols + c0, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const int64_t c = c0 + k;
      const float p = c < valid_cols ? __expf(v[k] - row_max) * inv_sum : 0.0f;
      v[k] = scale * (p - (c == target ? 1.0f : 0.0f));
    }
    store_vec<VEC>(logits + r * cols + c0, v);
  }
}

}  // namespace

void cross_entropy_row_stats(const bf16* logits, const int32_t* targets, int64_t rows, int64_t cols,
                             int64_t vocab_begin, int64_t valid_cols, float* stats, const KernelContext& ctx) {
  if (rows == 0) return;
  if (row_vector_width(cols) == 8)
    cross_entropy_row_stats_kernel<8><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream>>>(logits, targets, rows, cols,
                                                                                   vocab_begin, valid_cols, stats);
  else
    cross_entropy_row_stats_kernel<1><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream>>>(logits, targets, rows, cols,
                                                                                   vocab_begin, valid_cols, stats);
  PTDP_LAUNCH_CHECK(cross_entropy_row_stats_kernel);
}

void cross_entropy_rescale(float* stats, const float* group_max, int64_t rows, const KernelContext& ctx) {
  if (rows == 0) return;
  cross_entropy_rescale_kernel<<<blocks_for(rows, 256), 256, 0, ctx.stream>>>(stats, group_max, rows);
  PTDP_LAUNCH_CHECK(cross_entropy_rescale_kernel);
}

void cross_entropy_loss(const float* stats, int64_t rows, float* loss, const KernelContext& ctx) {
  cross_entropy_loss_kernel<<<1, kThreads, 0, ctx.stream>>>(stats, rows, loss);
  PTDP_LAUNCH_CHECK(cross_entropy_loss_kernel);
}

void cross_entropy_backward(bf16* logits, const int32_t* targets, const float* stats, int64_t rows, int64_t cols,
                            int64_t vocab_begin, int64_t valid_cols, float scale, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const int vec = row_vector_width(cols);
  const unsigned blocks = std::min<unsigned>(blocks_for(rows * cols / vec, 256), unsigned(ctx.sm_count) * 16);
  if (vec == 8)
    cross_entropy_backward_kernel<8><<<blocks, 256, 0, ctx.stream>>>(logits, targets, stats, rows, cols, vocab_begin, valid_cols,
                                                       scale);
  else
    cross_entropy_backward_kernel<1><<<blocks, 256, 0, ctx.stream>>>(logits, targets, stats, rows, cols, vocab_begin, valid_cols,
                                                       scale);
  PTDP_LAUNCH_CHECK(cross_entropy_backward_kernel);
}

}  // namespace ptdp::fused
