#pragma once
// The two FP8 formats of the hybrid recipe, emulated on fp32 values: rounding to the nearest
// value of the format (ties to even), saturating at the largest finite one, with subnormals.
// E4M3 (OCP "fn": 4 exponent bits of bias 7, 3 mantissa bits, no infinity, largest 448) and E5M2
// (5 exponent bits of bias 15, 2 mantissa bits, largest finite 57344). NaN stays NaN; ±infinity
// saturates to ±largest, as the GPU's saturating conversion (__NV_SATFINITE) does.
#include <cstdint>

#include <ptdp/fp8.hpp>

namespace ptdp::kref {

struct Fp8Format {
  int mantissa_bits;
  int min_normal_exponent;  // the exponent of the smallest normal value, 1 - bias
  float max_finite;
};

inline constexpr Fp8Format kE4M3{3, -6, kE4M3Max};
inline constexpr Fp8Format kE5M2{2, -14, kE5M2Max};

// The format that the hybrid recipe casts an operand to.
inline const Fp8Format& format_of(Fp8Operand operand) {
  return operand == Fp8Operand::OutputGradient ? kE5M2 : kE4M3;
}

// `value` rounded to the format.
float round_to_fp8(float value, const Fp8Format& format);

// The value of an 8-bit code of the format (for tests: the table of every representable value).
// E4M3's S.1111.111 and E5M2's exponent 31 with a mantissa are NaN, E5M2's exponent 31 without
// one is infinity.
float fp8_code_value(uint8_t code, const Fp8Format& format);

// out[i] = round_to_fp8(in[i] * scale): the scaled values the GEMM multiplies.
void cast_to_fp8(float* out, const float* in, int64_t n, float scale, const Fp8Format& format);

// The largest |value| of in[0 .. n), NaN-propagating (amax_update).
float amax_of(const float* in, int64_t n);

}  // namespace ptdp::kref
