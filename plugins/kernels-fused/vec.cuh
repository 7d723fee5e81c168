#pragma once
// Loads and stores of N consecutive elements as floats: 16-byte accesses when N is a multiple of 8
// (act_t) or 4 (fp32), scalar ones otherwise. Callers guarantee the alignment they ask for.
#include <cstdint>
#include <type_traits>

#include "activation_type.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// act_t and fp32, one way and the other (round to nearest even), alone and in pairs.
#if PTDP_FUSED_FP16
__device__ __forceinline__ float to_float(act_t x) { return __half2float(x); }
__device__ __forceinline__ act_t to_act(float x) { return __float2half_rn(x); }
__device__ __forceinline__ float2 to_float2(act2_t x) { return __half22float2(x); }
__device__ __forceinline__ act2_t to_act2(float a, float b) { return __floats2half2_rn(a, b); }
#else
__device__ __forceinline__ float to_float(act_t x) { return __bfloat162float(x); }
__device__ __forceinline__ act_t to_act(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ float2 to_float2(act2_t x) { return __bfloat1622float2(x); }
__device__ __forceinline__ act2_t to_act2(float a, float b) { return __floats2bfloat162_rn(a, b); }
#endif

// Eight act_t in 16 bytes, as floats and back.
__device__ __forceinline__ void unpack_act8(const uint4& raw, float* v) {
  const act2_t* h = reinterpret_cast<const act2_t*>(&raw);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = to_float2(h[k]);
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}
__device__ __forceinline__ uint4 pack_act8(const float* v) {
  uint4 raw;
  act2_t* h = reinterpret_cast<act2_t*>(&raw);
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = to_act2(v[2 * k], v[2 * k + 1]);
  return raw;
}

template <int N>
__device__ __forceinline__ void load_vec(const act_t* __restrict__ p, float (&v)[N]) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 8) unpack_act8(*reinterpret_cast<const uint4*>(p + i), v + i);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = to_float(p[i]);
  }
}

template <int N>
__device__ __forceinline__ void store_vec(act_t* __restrict__ p, const float (&v)[N]) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 8) *reinterpret_cast<uint4*>(p + i) = pack_act8(v + i);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = to_act(v[i]);
  }
}

// load_vec and store_vec with the streaming cache hint (ld.global.cs / st.global.cs: evict first),
// for data read or written for the last time, so that it does not push out of L2 what will be
// read again.
template <int N>
__device__ __forceinline__ void load_vec_streaming(const act_t* p, float (&v)[N]) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 8) unpack_act8(__ldcs(reinterpret_cast<const uint4*>(p + i)), v + i);
  } else {
    load_vec<N>(p, v);
  }
}

template <int N>
__device__ __forceinline__ void store_vec_streaming(act_t* p, const float (&v)[N]) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 8) __stcs(reinterpret_cast<uint4*>(p + i), pack_act8(v + i));
  } else {
    store_vec<N>(p, v);
  }
}

template <int N>
__device__ __forceinline__ void load_vec(const float* __restrict__ p, float (&v)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      float4 f = *reinterpret_cast<const float4*>(p + i);
      v[i] = f.x;
      v[i + 1] = f.y;
      v[i + 2] = f.z;
      v[i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = p[i];
  }
}

template <int N>
__device__ __forceinline__ void store_vec(float* __restrict__ p, const float (&v)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) *reinterpret_cast<float4*>(p + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = v[i];
  }
}

// N act_t as loaded (one 16-byte load when N is a multiple of 8), kept packed in registers until
// they are used.
template <int N>
struct ActVec {
  static_assert(N == 1 || N % 8 == 0, "Bf16Vec holds 1 or a multiple of 8 elements");
  static constexpr int kWords = N == 1 ? 1 : N / 8;
  using Word = std::conditional_t<N == 1, act_t, uint4>;
  Word word[kWords];
  __device__ __forceinline__ void load(const act_t* p) {
#pragma unroll
    for (int i = 0; i < kWords; ++i) word[i] = reinterpret_cast<const Word*>(p)[i];
  }
  __device__ __forceinline__ void unpack(float (&v)[N]) const {
    if constexpr (N == 1) {
      v[0] = to_float(word[0]);
    } else {
#pragma unroll
      for (int i = 0; i < kWords; ++i) unpack_act8(word[i], v + 8 * i);
    }
  }
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// p[0] + p[stride] + ... + p[(count - 1) * stride], added in that order, with eight loads in
// flight at a time: a sum over partial results must not wait out one memory latency per term.
__device__ __forceinline__ float strided_sum(const float* __restrict__ p, int64_t count, int64_t stride) {
  constexpr int kInFlight = 8;
  float sum = 0.0f;
  int64_t i = 0;
  for (; i + kInFlight <= count; i += kInFlight) {
    float v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) v[j] = p[(i + j) * stride];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) sum += v[j];
  }
  for (; i < count; ++i) sum += p[i * stride];
  return sum;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
