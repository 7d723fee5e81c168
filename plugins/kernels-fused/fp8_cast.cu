#include "fp8_cast.hpp"

#include <algorithm>
#include <cfloat>

#include "column_reduce.hpp"
#include "fp8_amax.cuh"
#include "fp8_tile.cuh"
#include "gelu.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/error.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

// Eight consecutive values of x as floats: one 16-byte load of act_t, two of fp32 (weights cast
// from their fp32 masters), with the streaming hint: a cast reads its input once.
__device__ __forceinline__ void load8(const act_t* x, float (&v)[8]) { load_vec_streaming<8>(x, v); }
__device__ __forceinline__ void load8(const float* x, float (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 8; i += 4) {
    const float4 f = __ldcs(reinterpret_cast<const float4*>(x + i));
    v[i] = f.x, v[i + 1] = f.y, v[i + 2] = f.z, v[i + 3] = f.w;
  }
}

__device__ __forceinline__ int max_bits_of8(const float (&v)[8]) {
  int bits = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) bits = max_bits(bits, magnitude_bits(v[k]));
  return bits;
}

// A block's maximum of each thread's `bits`, valid in thread 0. Every thread of the block calls it.
__device__ int block_max_bits(int bits) {
  __shared__ int warp_max[32];
  for (int offset = 16; offset > 0; offset /= 2) bits = max_bits(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
  const int linear = threadIdx.y * blockDim.x + threadIdx.x;
  const int warps = (blockDim.x * blockDim.y + 31) / 32;
  if (linear % 32 == 0) warp_max[linear / 32] = bits;
  __syncthreads();
  bits = linear < warps ? warp_max[linear] : 0;
  if (linear < 32)
    for (int offset = 16; offset > 0; offset /= 2) bits = max_bits(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
  return bits;
}

constexpr int kAmaxThreads = 256;
constexpr int kAmaxUnroll = 4;

// Each block reduces its part to scratch.partials; the last block to finish reduces those, writes
// *amax and sets the counter back to zero, so that nothing needs zeroing between casts.
template <class In>
__global__ void fp8_amax_kernel(const In* __restrict__ x, int64_t vectors, float* amax, Fp8AmaxScratch scratch) {
  int bits = 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kAmaxUnroll - 1) * stride < vectors; i += kAmaxUnroll * stride) {
    float v[kAmaxUnroll][8];
#pragma unroll
    for (int u = 0; u < kAmaxUnroll; ++u) load8(x + 8 * (i + u * stride), v[u]);
#pragma unroll
    for (int u = 0; u < kAmaxUnroll; ++u) bits = max_bits(bits, max_bits_of8(v[u]));
  }
  for (; i < vectors; i += stride) {
    float v[8];
    load8(x + 8 * i, v);
    bits = max_bits(bits, max_bits_of8(v));
  }
  bits = block_max_bits(bits);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    reinterpret_cast<int*>(scratch.partials)[blockIdx.x] = bits;
    __threadfence();
    last = atomicAdd(scratch.counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  bits = 0;
  for (int b = threadIdx.x; b < int(gridDim.x); b += blockDim.x)
    bits = max_bits(bits, reinterpret_cast<volatile int*>(scratch.partials)[b]);
  bits = block_max_bits(bits);
  if (threadIdx.x == 0) {
    *reinterpret_cast<int*>(amax) = bits;
    *scratch.counter = 0;
  }
}

// ptdp::fp8_scale (ptdp/fp8.hpp) on the device: the same arithmetic in double.
__device__ float scale_from_amax(float amax, float format_max, int margin) {
  if (!isfinite(amax)) return __int_as_float(0x7fc00000);
  if (amax <= 0.0f) return 1.0f;
  const double scale = ldexp(double(format_max) / double(amax), -margin);
  return scale > double(FLT_MAX) ? FLT_MAX : float(scale);
}

// What a cast reads, eight consecutive values of a row at a time: a matrix as it is...
template <class In>
struct StoredValues {
  static constexpr bool kRoundToAct = false;
  static constexpr int kMinBlocks = 1;  // the compiler's choice of registers: these move bytes
  const In* x;
  __device__ __forceinline__ void load(int64_t row, int64_t col, int64_t cols, float (&v)[8]) const {
    load8(x + row * cols + col, v);
  }
};

// ... or a GeLU's output gelu(pre + bias) (kGradient false), or the gradient of its input
// dy · gelu'(pre + bias), computed as they are read (fp8_cast_gelu). Each value is rounded to
// act_t before it is cast, as if stored and read back: the FP8 bytes are those of the unfused
// kernels.
template <bool kGradient>
struct GeluValues {
  static constexpr bool kRoundToAct = true;
  // Arithmetic as well as bytes: 4 blocks an SM (64 registers a thread, no spills) keep more
  // loads in flight while others compute than the 3 that the compiler's 72-78 registers allow.
  static constexpr int kMinBlocks = 4;
  Fp8GeluSource source;
  __device__ __forceinline__ void load(int64_t row, int64_t col, int64_t cols, float (&v)[8]) const {
    float p[8], b[8] = {};
    load_vec_streaming<8>(source.pre + row * cols + col, p);
    if (source.bias) load_vec<8>(source.bias + col, b);
    if constexpr (kGradient) {
      load_vec_streaming<8>(source.dy + row * cols + col, v);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] *= gelu_grad(p[k] + b[k]);
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = gelu(p[k] + b[k]);
    }
  }
};

// A tile of fp8_tile.cuh per block. Each thread reads its 8 values of a row four times (16 bytes
// of act_t, or 32 of fp32, each time), all four before it uses any: a stored tensor's cast does
// almost no arithmetic, so its speed is the bytes each SM keeps in flight (it runs at 83-100% of
// the device's copy bandwidth, kernels-fused-fp8-cast-bandwidth). It writes their FP8 bytes as
// they are and into the tile, then the tile's transpose. With `column_partials`, the tile's
// column sums of the values (before rounding) go to row blockIdx.y of it, summed in a fixed
// order, for finish_column_sums.
constexpr int kCastThreads = kTileThreads;

template <class Values, __nv_fp8_interpretation_t Kind>
__global__ void __launch_bounds__(kCastThreads, Values::kMinBlocks)
    fp8_cast_kernel(Values values, int64_t rows, int64_t cols, Fp8ScaleSource source, float format_max,
                    fp8* __restrict__ out, fp8* __restrict__ out_t, float* scale_inv, float* record,
                    float* __restrict__ column_partials) {
  __shared__ __align__(16) fp8 tile[kTileRows * kTilePitch];
  const int64_t row0 = int64_t(blockIdx.y) * kTileRows, col0 = int64_t(blockIdx.x) * kTileCols;
  // A thread's vectors share their 8 columns (the tile's rows are 8 vectors wide) and lie 32 rows apart.
  const int c = (threadIdx.x % (kTileCols / 8)) * 8, r0 = threadIdx.x / (kTileCols / 8);
  const int64_t col = col0 + c;
  float v[kVectorsPerThread][8];
  bool inside[kVectorsPerThread];
#pragma unroll
  for (int i = 0; i < kVectorsPerThread; ++i) {
    const int64_t row = row0 + r0 + i * kTileRowStep;
    inside[i] = row < rows && col < cols;
    if (inside[i]) values.load(row, col, cols, v[i]);
  }
  const float scale = source.scale ? *source.scale : scale_from_amax(*source.amax, format_max, source.margin);
  int bits = 0;
  float sums[8] = {};
#pragma unroll
  for (int i = 0; i < kVectorsPerThread; ++i) {
    if (!inside[i]) continue;
    const int r = r0 + i * kTileRowStep;
    if (column_partials)
#pragma unroll
      for (int k = 0; k < 8; ++k) sums[k] += v[i][k];
    if constexpr (Values::kRoundToAct)
#pragma unroll
      for (int k = 0; k < 8; ++k) v[i][k] = to_float(to_act(v[i][k]));
    if (record && source.scale) bits = max_bits(bits, max_bits_of8(v[i]));
    uint2 packed;
    fp8* q = reinterpret_cast<fp8*>(&packed);
#pragma unroll
    for (int k = 0; k < 8; ++k) q[k] = __nv_cvt_float_to_fp8(v[i][k] * scale, __NV_SATFINITE, Kind);
    if (out) *reinterpret_cast<uint2*>(out + (row0 + r) * cols + col) = packed;
    if (out_t) {
      *reinterpret_cast<uint32_t*>(tile + r * kTilePitch + c) = packed.x;
      *reinterpret_cast<uint32_t*>(tile + r * kTilePitch + c + 4) = packed.y;
    }
  }
  if (column_partials) {
    // Lanes 8 apart hold the same columns (of other rows): add them, then the warps' sums in order.
    __shared__ float warp_sums[kCastThreads / 32][kTileCols];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      sums[k] += __shfl_xor_sync(0xffffffffu, sums[k], 8);
      sums[k] += __shfl_xor_sync(0xffffffffu, sums[k], 16);
    }
    const int lane = threadIdx.x % 32;
    if (lane < 8)
#pragma unroll
      for (int k = 0; k < 8; ++k) warp_sums[threadIdx.x / 32][lane * 8 + k] = sums[k];
    __syncthreads();
    if (threadIdx.x < kTileCols && col0 + threadIdx.x < cols) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < kCastThreads / 32; ++w) sum += warp_sums[w][threadIdx.x];
      column_partials[int64_t(blockIdx.y) * cols + col0 + threadIdx.x] = sum;
    }
  }
  if (out_t) {
    __syncthreads();
    store_tile_transposed(tile, row0, col0, rows, cols, out_t);
  }
  if (record && !source.scale) {
    // Tensorwise: the amax the scale came from.
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
      atomic_max_magnitude(record, magnitude_bits(*source.amax));
  } else if (record) {
    bits = block_max_bits(bits);
    if (threadIdx.x == 0) atomic_max_magnitude(record, bits);
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *scale_inv = 1.0f / scale;
}

__global__ void fp8_record_kernel(Fp8AmaxRecords records) {
  const int i = threadIdx.x;
  if (i < records.count) atomic_max_magnitude(records.record[i], __float_as_int(*records.value[i]));
}

}  // namespace

namespace {

template <class In>
void amax_of(const In* x, int64_t n, float* amax, const Fp8AmaxScratch& scratch, const KernelContext& ctx) {
  if (n % 8 != 0) throw Error("kernels-fused: fp8_amax over " + std::to_string(n) + " values (must be a multiple of 8)");
  const int64_t vectors = n / 8;
  const int blocks = int(std::max<int64_t>(1, std::min<int64_t>(blocks_for(vectors, kAmaxThreads * kAmaxUnroll),
                                                                Fp8AmaxScratch::kMaxBlocks)));
  fp8_amax_kernel<<<blocks, kAmaxThreads, 0, ctx.stream>>>(x, vectors, amax, scratch);
  PTDP_LAUNCH_CHECK(fp8_amax_kernel);
}

template <class Values>
void cast(const Values& values, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source, fp8* out,
          fp8* out_t, float* scale_inv, float* record, float* column_partials, const KernelContext& ctx) {
  if (rows % 16 != 0 || cols % 16 != 0)
    throw Error("kernels-fused: an FP8 cast of " + std::to_string(rows) + " x " + std::to_string(cols) +
                " values (both must be multiples of 16)");
  if (rows == 0 || cols == 0) return;
  const dim3 grid(unsigned((cols + kTileCols - 1) / kTileCols), unsigned((rows + kTileRows - 1) / kTileRows));
  if (kind == Fp8Kind::E4M3) {
    fp8_cast_kernel<Values, __NV_E4M3><<<grid, kCastThreads, 0, ctx.stream>>>(values, rows, cols, source, 448.0f, out,
                                                                               out_t, scale_inv, record, column_partials);
    PTDP_LAUNCH_CHECK(fp8_cast_kernel<E4M3>);
  } else {
    fp8_cast_kernel<Values, __NV_E5M2><<<grid, kCastThreads, 0, ctx.stream>>>(
        values, rows, cols, source, 57344.0f, out, out_t, scale_inv, record, column_partials);
    PTDP_LAUNCH_CHECK(fp8_cast_kernel<E5M2>);
  }
}

}  // namespace

void fp8_amax(const act_t* x, int64_t n, float* amax, const Fp8AmaxScratch& scratch, const KernelContext& ctx) {
  amax_of(x, n, amax, scratch, ctx);
}
void fp8_amax(const float* x, int64_t n, float* amax, const Fp8AmaxScratch& scratch, const KernelContext& ctx) {
  amax_of(x, n, amax, scratch, ctx);
}

void fp8_cast(const act_t* x, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source, fp8* out,
              fp8* out_t, float* scale_inv, float* record, const KernelContext& ctx) {
  cast(StoredValues<act_t>{x}, rows, cols, kind, source, out, out_t, scale_inv, record, nullptr, ctx);
}
void fp8_cast(const float* x, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source, fp8* out,
              fp8* out_t, float* scale_inv, float* record, const KernelContext& ctx) {
  cast(StoredValues<float>{x}, rows, cols, kind, source, out, out_t, scale_inv, record, nullptr, ctx);
}

void fp8_cast_gelu(const Fp8GeluSource& gelu, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source,
                   fp8* out, fp8* out_t, float* scale_inv, float* record, float* dbias, const KernelContext& ctx) {
  if (!source.scale)
    throw Error("kernels-fused: a GeLU's values are cast as they are computed only under a given (delayed) scale");
  if (dbias && !gelu.dy) throw Error("kernels-fused: fp8_cast_gelu sums a bias gradient only of the input gradient");
  if (rows == 0 || cols == 0) return;
  const int row_tiles = int((rows + kTileRows - 1) / kTileRows);
  DeviceBuffer<float> partials;
  if (dbias) partials = allocate_buffer<float>(*ctx.arena, size_t(row_tiles) * cols);
  if (gelu.dy)
    cast(GeluValues<true>{gelu}, rows, cols, kind, source, out, out_t, scale_inv, record, partials.get(), ctx);
  else
    cast(GeluValues<false>{gelu}, rows, cols, kind, source, out, out_t, scale_inv, record, nullptr, ctx);
  if (dbias) finish_column_sums(partials.get(), row_tiles, cols, dbias, ctx.stream);
}

void fp8_record_amax(const Fp8AmaxRecords& records, const KernelContext& ctx) {
  if (records.count == 0) return;
  fp8_record_kernel<<<1, 32, 0, ctx.stream>>>(records);
  PTDP_LAUNCH_CHECK(fp8_record_kernel);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
