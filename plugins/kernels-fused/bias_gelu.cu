#include "bias_gelu.hpp"

#include <algorithm>

#include "column_reduce.hpp"
#include "gelu.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {

template <int VEC>
__global__ void bias_gelu_forward_kernel(const bf16* x, const float* __restrict__ bias, bf16* y,
                                         int64_t rows, int64_t cols) {
  const int64_t vecs_per_row = cols / VEC;
  const int64_t total = rows * vecs_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / vecs_per_row;
    const int64_t col = (i - row * vecs_per_row) * VEC;
    float v[VEC], b[VEC];
    load_vec<VEC>(x + row * cols + col, v);
    load_vec<VEC>(bias + col, b);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = gelu(v[k] + b[k]);
    store_vec<VEC>(y + row * cols + col, v);
  }
}

void bias_gelu_forward(const bf16* x, const float* bias, bf16* y, int64_t rows, int64_t cols,
                       const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const int vec = row_vector_width(cols);
  const int64_t work = rows * cols / vec;
  const unsigned blocks = std::min<unsigned>(blocks_for(work, 256), unsigned(ctx.sm_count) * 16);
  if (vec == 8)
    bias_gelu_forward_kernel<8><<<blocks, 256, 0, ctx.stream>>>(x, bias, y, rows, cols);
  else
    bias_gelu_forward_kernel<1><<<blocks, 256, 0, ctx.stream>>>(x, bias, y, rows, cols);
  PTDP_LAUNCH_CHECK(bias_gelu_forward_kernel);
}

template <int VEC>
__global__ void bias_gelu_backward_kernel(const bf16* dy, const bf16* __restrict__ x, const float* __restrict__ bias,
                                          bf16* dx, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                          float* __restrict__ partials) {
  const int64_t col = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  if (col >= cols) return;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float b[VEC], acc[VEC] = {};
  load_vec<VEC>(bias + col, b);
  for (int64_t r = begin; r < end; ++r) {
    float g[VEC], v[VEC];
    load_vec<VEC>(dy + r * cols + col, g);
    load_vec<VEC>(x + r * cols + col, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      g[k] *= gelu_grad(v[k] + b[k]);
      acc[k] += g[k];
    }
    store_vec<VEC>(dx + r * cols + col, g);
  }
  store_vec<VEC>(partials + int64_t(blockIdx.y) * cols + col, acc);
}

void bias_gelu_backward(const bf16* dy, const bf16* x, const float* bias, bf16* dx, float* dbias,
                        int64_t rows, int64_t cols, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const ColumnTiling t = plan_column_tiling(rows, cols, row_vector_width(cols), ctx.sm_count);
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(t.chunks()) * cols);
  if (t.vec == 8)
    bias_gelu_backward_kernel<8><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(
        dy, x, bias, dx, rows, cols, t.rows_per_chunk, partials.get());
  else
    bias_gelu_backward_kernel<1><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(
        dy, x, bias, dx, rows, cols, t.rows_per_chunk, partials.get());
  PTDP_LAUNCH_CHECK(bias_gelu_backward_kernel);
  finish_column_sums(partials.get(), t.chunks(), cols, dbias, ctx.stream);
}

}  // namespace ptdp::fused
