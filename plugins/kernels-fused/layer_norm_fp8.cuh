#pragma once
// LayerNorm's output cast to E4M3 by the kernel that normalizes it (layer_norm.cu and
// residual_layer_norm.cu, under the delayed recipe, whose scale is known before the values are):
// each value is rounded to act_t first, as if stored and read back, so the bytes, the amax and the
// scale inverse are those of fp8_cast on the act_t output, and LayerNorm's act_t output is
// neither written nor read back. A block normalizes kFp8LayerNormRows rows, keeps their FP8 bytes
// in shared memory and writes the transpose 16 rows (16 bytes) a column at a time.
#include <cstdint>

#include "fp8_amax.cuh"
#include "layer_norm.hpp"
#include "layer_norm_row.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// A block's rows (one 16-byte store a column of the transpose), two a warp, one after the other:
// a held row of 4096 columns takes 128 registers a lane, so 16 warps of one row each would spill.
constexpr int kFp8LayerNormRows = 16, kFp8LayerNormWarps = 8;

// Shared memory a block needs: its rows' FP8 bytes (64 KiB at 4096 columns, past the 48 KiB a
// launch gets without asking, so the kernel is allowed that much first).
inline size_t fp8_layer_norm_tile_bytes(int64_t cols) { return size_t(kFp8LayerNormRows) * size_t(cols); }
template <class Kernel>
void allow_fp8_layer_norm_tile(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    PTDP_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

// A held row's values as E4M3 bytes under `scale`: into the row of `out` (may be null) and the
// block's tile row; *bits raised to their amax (float bits, fp8_amax.cuh).
struct Fp8RowStore {
  fp8* out;
  fp8* tile;
  float scale;
  int* bits;
  __device__ __forceinline__ void operator()(int64_t c, const float (&v)[8]) const {
    uint2 packed;
    fp8* q = reinterpret_cast<fp8*>(&packed);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float stored = to_float(to_act(v[k]));
      *bits = max_bits(*bits, magnitude_bits(stored));
      q[k] = __nv_cvt_float_to_fp8(stored * scale, __NV_SATFINITE, __NV_E4M3);
    }
    if (out) *reinterpret_cast<uint2*>(out + c) = packed;
    *reinterpret_cast<uint2*>(tile + c) = packed;
  }
};

// After every warp of the block has stored its row in `tile` (and a __syncthreads): the
// transpose of the block's rows row0 .. row0 + 15, the amax and the scale inverse.
__device__ __forceinline__ void finish_fp8_layer_norm_block(const fp8* tile, int64_t row0, int64_t rows, int64_t cols,
                                                            const LayerNormFp8Out& y, float scale, int bits) {
  if (y.out_t) {
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      uint4 packed;
      fp8* q = reinterpret_cast<fp8*>(&packed);
#pragma unroll
      for (int k = 0; k < kFp8LayerNormRows; ++k) q[k] = tile[k * cols + c];
      *reinterpret_cast<uint4*>(y.out_t + c * rows + row0) = packed;
    }
  }
  if (y.record) {
    for (int offset = 16; offset > 0; offset /= 2) bits = max_bits(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
    if (threadIdx.x % 32 == 0) atomic_max_magnitude(y.record, bits);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *y.scale_inv = 1.0f / scale;
}

// A kernel's body: the block's kFp8LayerNormRows rows, each loaded into the lanes' registers by
// load_row(r, lane, row) (HeldRow's order), normalized into the shared tile and y.out, then the
// transpose, the amax and the scale inverse. The kernel is launched with the tile as dynamic
// shared memory (launch_fp8_layer_norm).
template <int N, class LoadRow>
__device__ __forceinline__ void layer_norm_fp8_rows(const LoadRow& load_row, const float* __restrict__ gamma,
                                                    const float* __restrict__ beta, const LayerNormFp8Out& y,
                                                    float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                    int64_t rows, float eps) {
  extern __shared__ __align__(16) fp8 fp8_tile[];
  constexpr int64_t cols = 256 * N;
  const int lane = threadIdx.x & 31;
  const int64_t row0 = int64_t(blockIdx.x) * kFp8LayerNormRows;
  const float scale = *y.scale;
  int bits = 0;
#pragma unroll 1
  for (int local = threadIdx.x / 32; local < kFp8LayerNormRows; local += kFp8LayerNormWarps) {
    const int64_t r = row0 + local;
    HeldRow<N> row;
    load_row(r, lane, row);
    const Fp8RowStore store{y.out ? y.out + r * cols : nullptr, fp8_tile + local * cols, scale, &bits};
    const RowStats stats = layer_norm_held_row<N>(row, gamma, beta, store, cols, eps, lane);
    store_row_stats(stats, r, lane, mean_out, rstd_out);
  }
  __syncthreads();
  finish_fp8_layer_norm_block(fp8_tile, row0, rows, cols, y, scale, bits);
}

// Launches kernel_for(n), the kernel for held width n (dispatch_held_row's), over the rows'
// blocks with the tile it needs; rows and cols as layer_norm_fp8_fits takes them.
template <class KernelFor, class... Args>
void launch_fp8_layer_norm(int64_t rows, int64_t cols, cudaStream_t stream, const KernelFor& kernel_for,
                           const Args&... args) {
  const size_t tile = fp8_layer_norm_tile_bytes(cols);
  dispatch_held_row(cols, [&](auto n) {
    const auto kernel = kernel_for(n);
    allow_fp8_layer_norm_tile(kernel, tile);
    kernel<<<unsigned(rows / kFp8LayerNormRows), kFp8LayerNormWarps * 32, tile, stream>>>(args...);
  });
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
