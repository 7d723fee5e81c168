#include "softmax.hpp"

#include <cfloat>

#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

enum class Mask { Causal, General };

constexpr int kWarpsPerBlock = 4;
constexpr int kBlockThreads = 256;
constexpr int kMaxWarpIters = 16;  // rows up to 16 * 256 = 4096 keys stay in registers

// Where a row's mask bytes are, for the general mask (row r of matrix m = (batch, head)).
__device__ __forceinline__ const uint8_t* mask_row(const uint8_t* mask, int64_t r, int rows, int heads, int cols) {
  const int64_t matrix = r / rows;
  const int64_t query = r - matrix * rows;
  const int64_t batch = matrix / heads;
  return mask + (batch * rows + query) * cols;
}

// One warp per row; each lane holds ITERS vectors of 8 keys in registers.
template <int ITERS, Mask MASK>
__global__ void softmax_forward_warp(const act_t* in, act_t* out, const uint8_t* __restrict__ mask, int64_t total_rows,
                                     int rows, int heads, int cols, float scale) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= total_rows) return;
  const int query = static_cast<int>(r % rows);
  const act_t* src = in + r * cols;
  act_t* dst = out + r * cols;
  const uint8_t* mrow = MASK == Mask::General ? mask_row(mask, r, rows, heads, cols) : nullptr;

  float v[ITERS][8];
  float row_max = -FLT_MAX;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * 32 + lane) * 8;
    const bool load = col < cols && (MASK != Mask::Causal || col <= query);
    if (load) {
      load_vec<8>(src + col, v[it]);
      uint2 hidden_bytes = make_uint2(0, 0);
      if constexpr (MASK == Mask::General) hidden_bytes = *reinterpret_cast<const uint2*>(mrow + col);
      const uint8_t* hidden = reinterpret_cast<const uint8_t*>(&hidden_bytes);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const bool visible = MASK == Mask::Causal ? col + k <= query : hidden[k] == 0;
        v[it][k] = visible ? v[it][k] * scale : -INFINITY;
        row_max = fmaxf(row_max, v[it][k]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[it][k] = -INFINITY;
    }
  }
  row_max = warp_max(row_max);
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < ITERS; ++it)
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float e = v[it][k] == -INFINITY ? 0.0f : __expf(v[it][k] - row_max);
      v[it][k] = e;
      sum += e;
    }
  sum = warp_sum(sum);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * 32 + lane) * 8;
    if (col < cols) {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[it][k] *= inv;
      store_vec<8>(dst + col, v[it]);
    }
  }
}

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* shared) {
  v = is_max ? warp_max(v) : warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  __syncthreads();  // shared may still be read from a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  float r = lane < warps ? shared[lane] : (is_max ? -FLT_MAX : 0.0f);
  return is_max ? warp_max(r) : warp_sum(r);
}

// One block per row, any row length: the row is read from memory (mostly cache) in three passes.
template <Mask MASK>
__global__ void softmax_forward_block(const act_t* in, act_t* out, const uint8_t* __restrict__ mask, int rows,
                                      int heads, int cols, float scale) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const int query = static_cast<int>(r % rows);
  const act_t* src = in + r * cols;
  act_t* dst = out + r * cols;
  const uint8_t* mrow = MASK == Mask::General ? mask_row(mask, r, rows, heads, cols) : nullptr;
  auto visible = [&](int j) { return MASK == Mask::Causal ? j <= query : mrow[j] == 0; };
  const int end = MASK == Mask::Causal ? min(cols, query + 1) : cols;

  float row_max = -FLT_MAX;
  for (int j = threadIdx.x; j < end; j += blockDim.x)
    if (visible(j)) row_max = fmaxf(row_max, to_float(src[j]) * scale);
  row_max = block_reduce(row_max, true, shared);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < end; j += blockDim.x)
    if (visible(j)) sum += __expf(to_float(src[j]) * scale - row_max);
  sum = block_reduce(sum, false, shared);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float p = j < end && visible(j) ? __expf(to_float(src[j]) * scale - row_max) * inv : 0.0f;
    dst[j] = to_act(p);
  }
}

template <Mask MASK, int ITERS>
void launch_warp_forward(const act_t* in, act_t* out, const uint8_t* mask, int64_t total_rows, int rows, int heads,
                         int cols, float scale, const KernelContext& ctx) {
  softmax_forward_warp<ITERS, MASK><<<blocks_for(total_rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, ctx.stream>>>(
      in, out, mask, total_rows, rows, heads, cols, scale);
  PTDP_LAUNCH_CHECK(softmax_forward_warp);
}

template <Mask MASK>
void softmax_forward(const act_t* in, act_t* out, const uint8_t* mask, int64_t total_rows, int rows, int heads,
                     int cols, float scale, const KernelContext& ctx) {
  if (total_rows == 0 || cols == 0) return;
  if (cols % 8 == 0 && cols <= kMaxWarpIters * 256) {
    const int iters = (cols + 255) / 256;
    if (iters <= 1) launch_warp_forward<MASK, 1>(in, out, mask, total_rows, rows, heads, cols, scale, ctx);
    else if (iters <= 2) launch_warp_forward<MASK, 2>(in, out, mask, total_rows, rows, heads, cols, scale, ctx);
    else if (iters <= 4) launch_warp_forward<MASK, 4>(in, out, mask, total_rows, rows, heads, cols, scale, ctx);
    else if (iters <= 8) launch_warp_forward<MASK, 8>(in, out, mask, total_rows, rows, heads, cols, scale, ctx);
    else launch_warp_forward<MASK, 16>(in, out, mask, total_rows, rows, heads, cols, scale, ctx);
    return;
  }
  softmax_forward_block<MASK><<<static_cast<unsigned>(total_rows), kBlockThreads, 0, ctx.stream>>>(
      in, out, mask, rows, heads, cols, scale);
  PTDP_LAUNCH_CHECK(softmax_forward_block);
}

template <int ITERS, bool CAUSAL>
__global__ void softmax_backward_warp(const act_t* __restrict__ probs, const act_t* dprobs, act_t* dscores,
                                      int64_t total_rows, int rows, int cols, float scale) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= total_rows) return;
  const int query = static_cast<int>(r % rows);
  float p[ITERS][8], g[ITERS][8];
  float dot = 0.0f;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * 32 + lane) * 8;
    if (col < cols && (!CAUSAL || col <= query)) {
      load_vec<8>(probs + r * cols + col, p[it]);
      load_vec<8>(dprobs + r * cols + col, g[it]);
#pragma unroll
      for (int k = 0; k < 8; ++k) dot += p[it][k] * g[it][k];
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) p[it][k] = g[it][k] = 0.0f;
    }
  }
  dot = warp_sum(dot);
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * 32 + lane) * 8;
    if (col < cols) {
#pragma unroll
      for (int k = 0; k < 8; ++k) g[it][k] = scale * p[it][k] * (g[it][k] - dot);
      store_vec<8>(dscores + r * cols + col, g[it]);
    }
  }
}

template <bool CAUSAL>
__global__ void softmax_backward_block(const act_t* __restrict__ probs, const act_t* dprobs, act_t* dscores, int rows,
                                       int cols, float scale) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const int query = static_cast<int>(r % rows);
  const int end = CAUSAL ? min(cols, query + 1) : cols;
  const act_t* p = probs + r * cols;
  const act_t* g = dprobs + r * cols;
  float dot = 0.0f;
  for (int j = threadIdx.x; j < end; j += blockDim.x) dot += to_float(p[j]) * to_float(g[j]);
  dot = block_reduce(dot, false, shared);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = j < end ? scale * to_float(p[j]) * (to_float(g[j]) - dot) : 0.0f;
    dscores[r * cols + j] = to_act(d);
  }
}

template <bool CAUSAL, int ITERS>
void launch_warp_backward(const act_t* probs, const act_t* dprobs, act_t* dscores, int64_t total_rows, int rows,
                          int cols, float scale, const KernelContext& ctx) {
  softmax_backward_warp<ITERS, CAUSAL><<<blocks_for(total_rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, ctx.stream>>>(
      probs, dprobs, dscores, total_rows, rows, cols, scale);
  PTDP_LAUNCH_CHECK(softmax_backward_warp);
}

template <bool CAUSAL>
void softmax_backward(const act_t* probs, const act_t* dprobs, act_t* dscores, int64_t total_rows, int rows, int cols,
                      float scale, const KernelContext& ctx) {
  if (cols % 8 == 0 && cols <= kMaxWarpIters * 256) {
    const int iters = (cols + 255) / 256;
    if (iters <= 1) launch_warp_backward<CAUSAL, 1>(probs, dprobs, dscores, total_rows, rows, cols, scale, ctx);
    else if (iters <= 2) launch_warp_backward<CAUSAL, 2>(probs, dprobs, dscores, total_rows, rows, cols, scale, ctx);
    else if (iters <= 4) launch_warp_backward<CAUSAL, 4>(probs, dprobs, dscores, total_rows, rows, cols, scale, ctx);
    else if (iters <= 8) launch_warp_backward<CAUSAL, 8>(probs, dprobs, dscores, total_rows, rows, cols, scale, ctx);
    else launch_warp_backward<CAUSAL, 16>(probs, dprobs, dscores, total_rows, rows, cols, scale, ctx);
    return;
  }
  softmax_backward_block<CAUSAL><<<static_cast<unsigned>(total_rows), kBlockThreads, 0, ctx.stream>>>(
      probs, dprobs, dscores, rows, cols, scale);
  PTDP_LAUNCH_CHECK(softmax_backward_block);
}

}  // namespace

void scaled_causal_softmax_forward(const act_t* scores, act_t* probs, int64_t matrices, int rows, int cols,
                                   float scale, const KernelContext& ctx) {
  softmax_forward<Mask::Causal>(scores, probs, nullptr, matrices * rows, rows, 1, cols, scale, ctx);
}

void scaled_masked_softmax_forward(const act_t* scores, const uint8_t* mask, act_t* probs, int64_t batch,
                                   int heads, int rows, int cols, float scale, const KernelContext& ctx) {
  softmax_forward<Mask::General>(scores, probs, mask, batch * heads * rows, rows, heads, cols, scale, ctx);
}

void scaled_softmax_backward(const act_t* probs, const act_t* dprobs, act_t* dscores, int64_t matrices, int rows,
                             int cols, float scale, bool causal, const KernelContext& ctx) {
  if (matrices == 0 || rows == 0 || cols == 0) return;
  if (causal) softmax_backward<true>(probs, dprobs, dscores, matrices * rows, rows, cols, scale, ctx);
  else softmax_backward<false>(probs, dprobs, dscores, matrices * rows, rows, cols, scale, ctx);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
