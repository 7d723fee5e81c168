#include "fp8_transpose.hpp"

#include "fp8_tile.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/error.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

// fp8_cast's tiling (fp8_tile.cuh) without its arithmetic: each thread's four loads issued
// before any store.
__global__ void __launch_bounds__(kTileThreads) fp8_transpose_kernel(const fp8* __restrict__ x, int64_t rows,
                                                                     int64_t cols, fp8* __restrict__ out_t) {
  __shared__ __align__(16) fp8 tile[kTileRows * kTilePitch];
  const int64_t row0 = int64_t(blockIdx.y) * kTileRows, col0 = int64_t(blockIdx.x) * kTileCols;
  const int c = (threadIdx.x % (kTileCols / 8)) * 8, r0 = threadIdx.x / (kTileCols / 8);
  const int64_t col = col0 + c;
  uint2 v[kVectorsPerThread];
#pragma unroll
  for (int i = 0; i < kVectorsPerThread; ++i) {
    const int64_t row = row0 + r0 + i * kTileRowStep;
    v[i] = row < rows && col < cols ? __ldcs(reinterpret_cast<const uint2*>(x + row * cols + col)) : make_uint2(0, 0);
  }
#pragma unroll
  for (int i = 0; i < kVectorsPerThread; ++i) {
    const int r = r0 + i * kTileRowStep;
    *reinterpret_cast<uint32_t*>(tile + r * kTilePitch + c) = v[i].x;
    *reinterpret_cast<uint32_t*>(tile + r * kTilePitch + c + 4) = v[i].y;
  }
  __syncthreads();
  store_tile_transposed(tile, row0, col0, rows, cols, out_t);
}

}  // namespace

void fp8_transpose(const fp8* x, int64_t rows, int64_t cols, fp8* out_t, const KernelContext& ctx) {
  if (rows % 16 != 0 || cols % 16 != 0)
    throw Error("kernels-fused: an FP8 transpose of " + std::to_string(rows) + " x " + std::to_string(cols) +
                " values (both must be multiples of 16)");
  if (rows == 0 || cols == 0) return;
  const dim3 grid(unsigned((cols + kTileCols - 1) / kTileCols), unsigned((rows + kTileRows - 1) / kTileRows));
  fp8_transpose_kernel<<<grid, kTileThreads, 0, ctx.stream>>>(x, rows, cols, out_t);
  PTDP_LAUNCH_CHECK(fp8_transpose_kernel);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
