#include "column_reduce.hpp"

#include <algorithm>

#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {

ColumnTiling plan_column_tiling(int64_t rows, int64_t cols, int vec, int sm_count) {
  ColumnTiling t;
  t.vec = vec;
  t.rows = rows;
  t.cols = cols;
  const int64_t col_tiles = (cols + int64_t(ColumnTiling::kThreads) * vec - 1) / (int64_t(ColumnTiling::kThreads) * vec);
  // About four blocks per multiprocessor, and at least 16 rows per chunk so the partials stay
  // small next to the matrix.
  const int64_t target_blocks = int64_t(4) * std::max(sm_count, 1);
  int64_t chunks = std::max<int64_t>(1, target_blocks / std::max<int64_t>(col_tiles, 1));
  chunks = std::min<int64_t>(chunks, std::max<int64_t>(1, rows / 16));
  chunks = std::min<int64_t>(chunks, 65535);
  t.rows_per_chunk = std::max<int64_t>(1, (rows + chunks - 1) / chunks);
  chunks = std::max<int64_t>(1, (rows + t.rows_per_chunk - 1) / t.rows_per_chunk);
  t.grid = dim3(static_cast<unsigned>(std::max<int64_t>(col_tiles, 1)), static_cast<unsigned>(chunks));
  return t;
}

__global__ void finish_column_sums_kernel(const float* __restrict__ partials, int chunks, int64_t cols,
                                          float* __restrict__ accum) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float sum = 0.0f;
  for (int k = 0; k < chunks; ++k) sum += partials[int64_t(k) * cols + c];
  accum[c] += sum;
}

void finish_column_sums(const float* partials, int chunks, int64_t cols, float* accum, cudaStream_t stream) {
  if (cols == 0 || accum == nullptr) return;
  finish_column_sums_kernel<<<blocks_for(cols, 256), 256, 0, stream>>>(partials, chunks, cols, accum);
  PTDP_LAUNCH_CHECK(finish_column_sums_kernel);
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }

template <class T>
__global__ void accumulate_sums_kernel(const T* __restrict__ sums, int64_t n, float* __restrict__ accum) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) accum[i] += to_float(sums[i]);
}

void accumulate_sums(const void* sums, bool bf16_sums, int64_t n, float* accum, cudaStream_t stream) {
  if (n == 0) return;
  if (bf16_sums) {
    accumulate_sums_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(static_cast<const bf16*>(sums), n, accum);
  } else {
    accumulate_sums_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(static_cast<const float*>(sums), n, accum);
  }
  PTDP_LAUNCH_CHECK(accumulate_sums_kernel);
}

template <int VEC>
__global__ void column_sum_kernel(const bf16* __restrict__ x, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                  float* __restrict__ partials) {
  const int64_t col = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  if (col >= cols) return;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc[VEC] = {};
  for (int64_t r = begin; r < end; ++r) {
    float v[VEC];
    load_vec<VEC>(x + r * cols + col, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) acc[i] += v[i];
  }
  store_vec<VEC>(partials + int64_t(blockIdx.y) * cols + col, acc);
}

void column_sum_accumulate(const bf16* x, int64_t rows, int64_t cols, float* accum, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const ColumnTiling t = plan_column_tiling(rows, cols, row_vector_width(cols), ctx.sm_count);
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(t.chunks()) * cols);
  if (t.vec == 8)
    column_sum_kernel<8><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(x, rows, cols, t.rows_per_chunk, partials.get());
  else
    column_sum_kernel<1><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(x, rows, cols, t.rows_per_chunk, partials.get());
  PTDP_LAUNCH_CHECK(column_sum_kernel);
  finish_column_sums(partials.get(), t.chunks(), cols, accum, ctx.stream);
}

}  // namespace ptdp::fused
