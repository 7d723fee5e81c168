#pragma once
// Column sums without atomics, for bias, LayerNorm and embedding gradients. A kernel that walks a
// [rows, cols] matrix is launched on a 2-D grid: blockIdx.x picks a tile of columns (one vector
// of columns per thread), blockIdx.y a chunk of rows; each thread sums its columns over its chunk
// and writes one partial row (column_sum_accumulate's own kernel splits a block's rows among its
// warps and adds their sums in order). finish_column_sums then adds the partials, in a fixed
// order, to an fp32 accumulator, so the result is the same on every run.
#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct ColumnTiling {
  static constexpr int kThreads = 128;
  int vec = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rows_per_chunk = 1;
  dim3 grid;
  int chunks() const { return static_cast<int>(grid.y); }
};

ColumnTiling plan_column_tiling(int64_t rows, int64_t cols, int vec, int sm_count);

// accum[c] += sum over chunks of partials[chunk * cols + c].
void finish_column_sums(const float* partials, int chunks, int64_t cols, float* accum, cudaStream_t stream);

// accum[i] += sums[i]: the n sums a GEMM epilogue wrote (fp32, or act_t when act_sums) added to an
// fp32 accumulator.
void accumulate_sums(const void* sums, bool act_sums, int64_t n, float* accum, cudaStream_t stream);

// accum[c] += sum over rows of x[r * cols + c], for an act_t matrix.
void column_sum_accumulate(const act_t* x, int64_t rows, int64_t cols, float* accum, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
