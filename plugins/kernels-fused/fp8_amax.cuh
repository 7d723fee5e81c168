#pragma once
// An amax kept as the bits of a float: the largest |value| as an int, raised with integer max and
// atomicMax. Non-negative floats order as their bit patterns do, and every NaN with the sign
// cleared lies above infinity, so an integer max keeps NaN.

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

__device__ __forceinline__ int magnitude_bits(float v) { return __float_as_int(fabsf(v)); }

__device__ __forceinline__ int max_bits(int a, int b) { return a > b ? a : b; }

__device__ __forceinline__ void atomic_max_magnitude(float* target, int bits) {
  atomicMax(reinterpret_cast<int*>(target), bits);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
