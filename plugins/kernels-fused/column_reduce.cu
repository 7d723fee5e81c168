#include "column_reduce.hpp"

#include <algorithm>

#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

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
  accum[c] += strided_sum(partials + c, chunks, cols);
}

void finish_column_sums(const float* partials, int chunks, int64_t cols, float* accum, cudaStream_t stream) {
  if (cols == 0 || accum == nullptr) return;
  finish_column_sums_kernel<<<blocks_for(cols, 256), 256, 0, stream>>>(partials, chunks, cols, accum);
  PTDP_LAUNCH_CHECK(finish_column_sums_kernel);
}

__device__ __forceinline__ float to_float(float x) { return x; }

template <class T>
__global__ void accumulate_sums_kernel(const T* __restrict__ sums, int64_t n, float* __restrict__ accum) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) accum[i] += to_float(sums[i]);
}

void accumulate_sums(const void* sums, bool act_sums, int64_t n, float* accum, cudaStream_t stream) {
  if (n == 0) return;
  if (act_sums) {
    accumulate_sums_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(static_cast<const act_t*>(sums), n, accum);
  } else {
    accumulate_sums_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(static_cast<const float*>(sums), n, accum);
  }
  PTDP_LAUNCH_CHECK(accumulate_sums_kernel);
}

// The column sums of a bias gradient read a whole activation gradient (up to 134 MB a block of
// the 1.3B model) and do nothing else, so they are made for bandwidth: a block takes 32 vectors of
// columns and a chunk of rows; each of its warps reads every kColumnSumWarps-th row of the chunk
// (a row's 32 vectors: one 512-byte read), kRowsInFlight rows at once, and the warps' sums are
// then added in warp order.
constexpr int kColumnSumWarps = 8;
constexpr int kRowsInFlight = 4;

template <int VEC>
__global__ void __launch_bounds__(kColumnSumWarps * 32)
    column_sum_kernel(const act_t* __restrict__ x, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                      float* __restrict__ partials) {
  __shared__ float warp_sums[kColumnSumWarps][32 * VEC];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t col = (int64_t(blockIdx.x) * 32 + lane) * VEC;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc[VEC] = {};
  if (col < cols) {
    int64_t r = begin + warp;
    for (; r + (kRowsInFlight - 1) * kColumnSumWarps < end; r += kRowsInFlight * kColumnSumWarps) {
      float v[kRowsInFlight][VEC];
#pragma unroll
      for (int i = 0; i < kRowsInFlight; ++i) load_vec<VEC>(x + (r + i * kColumnSumWarps) * cols + col, v[i]);
#pragma unroll
      for (int i = 0; i < kRowsInFlight; ++i)
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc[k] += v[i][k];
    }
    for (; r < end; r += kColumnSumWarps) {
      float v[VEC];
      load_vec<VEC>(x + r * cols + col, v);
#pragma unroll
      for (int k = 0; k < VEC; ++k) acc[k] += v[k];
    }
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) warp_sums[warp][lane * VEC + k] = acc[k];
  __syncthreads();
  // Thread t adds column t of the block's tile over the warps, in order.
  for (int t = threadIdx.x; t < 32 * VEC; t += blockDim.x) {
    const int64_t c = int64_t(blockIdx.x) * 32 * VEC + t;
    if (c >= cols) continue;
    float sum = 0.0f;
    for (int w = 0; w < kColumnSumWarps; ++w) sum += warp_sums[w][t];
    partials[int64_t(blockIdx.y) * cols + c] = sum;
  }
}

void column_sum_accumulate(const act_t* x, int64_t rows, int64_t cols, float* accum, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const int vec = row_vector_width(cols);
  const int64_t col_tiles = (cols + 32 * vec - 1) / (32 * vec);
  // About eight blocks per multiprocessor (a full one), each chunk at least a few rows per warp.
  const int64_t target_blocks = int64_t(8) * std::max(ctx.sm_count, 1);
  int64_t chunks = std::max<int64_t>(1, target_blocks / col_tiles);
  chunks = std::min<int64_t>({chunks, std::max<int64_t>(1, rows / (4 * kColumnSumWarps)), 65535});
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(chunks));
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(chunks) * cols);
  if (vec == 8)
    column_sum_kernel<8><<<grid, kColumnSumWarps * 32, 0, ctx.stream>>>(x, rows, cols, rows_per_chunk, partials.get());
  else
    column_sum_kernel<1><<<grid, kColumnSumWarps * 32, 0, ctx.stream>>>(x, rows, cols, rows_per_chunk, partials.get());
  PTDP_LAUNCH_CHECK(column_sum_kernel);
  finish_column_sums(partials.get(), int(chunks), cols, accum, ctx.stream);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
