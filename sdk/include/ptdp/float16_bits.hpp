#pragma once
// The bits of the two 16-bit float formats, to and from fp32, on the host: bf16 (fp32's upper
// half) and IEEE half (5 exponent bits of bias 15, 10 mantissa bits, subnormals down to 2^-24,
// largest finite 65504). Rounding is to the nearest value, ties to even; NaN stays NaN; a half
// beyond 65504 (65520 and up) becomes infinite, as a GPU's conversion makes it. One definition
// for what reduces such tensors on the CPU (host_reduce.hpp), what emulates fp16 storage
// (kernels-ref) and the tests that read such tensors.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ptdp {

inline float bf16_to_float(uint16_t v) {
  const uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

inline float f16_to_float(uint16_t v) {
  const uint32_t sign = uint32_t{v & 0x8000u} << 16;
  const uint32_t exponent = (v >> 10) & 0x1fu, mantissa = v & 0x3ffu;
  float f;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in fp32
    f = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -f : f;
  }
  const uint32_t bits = sign | (exponent == 0x1f ? 0x7f800000u | (mantissa << 13) : ((exponent + 112) << 23) | (mantissa << 13));
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t float_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  bits &= 0x7fffffffu;
  if (bits > 0x7f800000u) return sign | 0x7e00u;   // NaN stays NaN
  if (bits >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round beyond 65504: infinity
  if (bits < 0x38800000u) {
    // Below 2^-14, the subnormals: a multiple of 2^-24, scaled exactly and rounded to nearest even
    // (the default rounding mode); 1024 is the smallest normal's code.
    float magnitude;
    std::memcpy(&magnitude, &bits, sizeof(magnitude));
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  }
  bits += 0xfffu + ((bits >> 13) & 1u);  // round to nearest even at the 10th mantissa bit
  return sign | static_cast<uint16_t>((bits - (112u << 23)) >> 13);
}

}  // namespace ptdp
