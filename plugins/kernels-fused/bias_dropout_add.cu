#include "bias_dropout_add.hpp"

#include <algorithm>

#include "bias_dropout_add.cuh"
#include "column_reduce.hpp"
#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

template <int VEC, bool DROPOUT>
__global__ void bias_dropout_add_forward_kernel(const act_t* x, const float* __restrict__ bias, const act_t* residual,
                                                act_t* out, int64_t rows, int64_t cols, DropoutSite dropout) {
  const int64_t vecs_per_row = cols / VEC;
  const int64_t total = rows * vecs_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / vecs_per_row;
    const int64_t col = (i - row * vecs_per_row) * VEC;
    bias_dropout_add_vector<VEC, DROPOUT>(x, bias, residual, out, row, col, cols, dropout);
  }
}

template <int VEC, bool DROPOUT>
static void launch_forward(const act_t* x, const float* bias, const act_t* residual, act_t* out, int64_t rows,
                           int64_t cols, const DropoutSite& dropout, const KernelContext& ctx) {
  const int64_t work = rows * cols / VEC;
  const unsigned blocks = std::min<unsigned>(blocks_for(work, 256), unsigned(ctx.sm_count) * 16);
  bias_dropout_add_forward_kernel<VEC, DROPOUT><<<blocks, 256, 0, ctx.stream>>>(x, bias, residual, out, rows, cols,
                                                                                 dropout);
  PTDP_LAUNCH_CHECK(bias_dropout_add_forward_kernel);
}

void bias_dropout_add_forward(const act_t* x, const float* bias, const act_t* residual, act_t* out,
                              int64_t rows, int64_t cols, const DropoutSite& dropout, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const bool vec8 = row_vector_width(cols) == 8;
  if (dropout.active()) {
    if (vec8) launch_forward<8, true>(x, bias, residual, out, rows, cols, dropout, ctx);
    else launch_forward<1, true>(x, bias, residual, out, rows, cols, dropout, ctx);
  } else {
    if (vec8) launch_forward<8, false>(x, bias, residual, out, rows, cols, dropout, ctx);
    else launch_forward<1, false>(x, bias, residual, out, rows, cols, dropout, ctx);
  }
}

template <int VEC, bool DROPOUT>
__global__ void bias_dropout_add_backward_kernel(const act_t* dout, act_t* dx, int64_t rows, int64_t cols,
                                                 int64_t rows_per_chunk, DropoutSite dropout,
                                                 float* __restrict__ partials) {
  const int64_t col = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  if (col >= cols) return;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc[VEC] = {};
  for (int64_t r = begin; r < end; ++r) {
    float g[VEC];
    load_vec<VEC>(dout + r * cols + col, g);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if constexpr (DROPOUT) g[k] *= dropout.factor(r, col + k);
      acc[k] += g[k];
    }
    store_vec<VEC>(dx + r * cols + col, g);
  }
  store_vec<VEC>(partials + int64_t(blockIdx.y) * cols + col, acc);
}

template <int VEC, bool DROPOUT>
static void launch_backward(const act_t* dout, act_t* dx, float* partials, const ColumnTiling& t,
                            const DropoutSite& dropout, const KernelContext& ctx) {
  bias_dropout_add_backward_kernel<VEC, DROPOUT><<<t.grid, ColumnTiling::kThreads, 0, ctx.stream>>>(
      dout, dx, t.rows, t.cols, t.rows_per_chunk, dropout, partials);
  PTDP_LAUNCH_CHECK(bias_dropout_add_backward_kernel);
}

void bias_dropout_add_backward(const act_t* dout, act_t* dx, float* dbias, int64_t rows, int64_t cols,
                               const DropoutSite& dropout, const KernelContext& ctx) {
  if (rows == 0 || cols == 0) return;
  const ColumnTiling t = plan_column_tiling(rows, cols, row_vector_width(cols), ctx.sm_count);
  auto partials = allocate_buffer<float>(*ctx.arena, size_t(t.chunks()) * cols);
  if (dropout.active()) {
    if (t.vec == 8) launch_backward<8, true>(dout, dx, partials.get(), t, dropout, ctx);
    else launch_backward<1, true>(dout, dx, partials.get(), t, dropout, ctx);
  } else {
    if (t.vec == 8) launch_backward<8, false>(dout, dx, partials.get(), t, dropout, ctx);
    else launch_backward<1, false>(dout, dx, partials.get(), t, dropout, ctx);
  }
  finish_column_sums(partials.get(), t.chunks(), cols, dbias, ctx.stream);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
