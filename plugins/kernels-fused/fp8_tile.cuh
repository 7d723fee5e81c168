#pragma once
// The tile through which fp8_cast.cu and fp8_transpose.cu write a transpose: 128 rows x 64 columns
// of FP8 bytes a block of 256 threads, kept in shared memory, then written 2 x 16 bytes a thread:
// 16 consecutive rows of one column, twice. Each thread reads 8 columns of a row four times, 32
// rows apart. Every global access is a whole 8 or 16 bytes.
#include <cuda_fp8.h>

#include <cstdint>

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

constexpr int kTileRows = 128, kTileCols = 64, kTileThreads = 256;
constexpr int kVectorsPerThread = kTileRows * kTileCols / 8 / kTileThreads;  // 4
constexpr int kTileRowStep = kTileThreads / (kTileCols / 8);                 // 32: a thread's rows apart
constexpr int kTilePitch = kTileCols + 4;  // bytes a tile row takes in shared memory: no bank conflicts down a column

// The transpose of the block's tile (rows row0.., columns col0..) into out_t [cols, rows], after a
// __syncthreads that follows the tile's last write. rows is a multiple of 16.
__device__ __forceinline__ void store_tile_transposed(const __nv_fp8_storage_t* tile, int64_t row0, int64_t col0,
                                                      int64_t rows, int64_t cols, __nv_fp8_storage_t* out_t) {
  // A warp writes 64 contiguous bytes of each of 8 columns of out_t per store.
  const int tc = threadIdx.x / 4;
  const int64_t tcol = col0 + tc;
#pragma unroll
  for (int half = 0; half < kTileRows / 64; ++half) {
    const int tr = half * 64 + (threadIdx.x % 4) * 16;
    const int64_t row = row0 + tr;
    if (tcol < cols && row < rows) {
      uint4 packed;
      __nv_fp8_storage_t* q = reinterpret_cast<__nv_fp8_storage_t*>(&packed);
#pragma unroll
      for (int k = 0; k < 16; ++k) q[k] = tile[(tr + k) * kTilePitch + tc];
      *reinterpret_cast<uint4*>(out_t + tcol * rows + row) = packed;
    }
  }
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
