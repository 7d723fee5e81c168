#pragma once
// IEEE 754 half precision (binary16), emulated on fp32 values: what precision.params = "fp16"
// stores in 16 bits on a GPU. 5 exponent bits of bias 15, 10 mantissa bits, subnormals down to
// 2^-24, largest finite 65504. Rounding is to the nearest value, ties to even, and a magnitude
// that rounds above 65504 (65520 and up) becomes infinite, as a GPU's float-to-half conversion
// does: that is how a loss scale too large shows itself. NaN stays NaN, ±infinity stays.
#include <cstdint>

namespace ptdp::kref {

inline constexpr float kHalfMax = 65504.0f;
inline constexpr int kHalfMantissaBits = 10;
inline constexpr int kHalfMinNormalExponent = -14;  // the smallest normal value is 2^-14

// `value` rounded to half.
float round_to_fp16(float value);

// x[0 .. n) rounded to half, in place.
void round_to_fp16(float* x, int64_t n);

// The value of a 16-bit half code (for tests: the table of every representable value).
float fp16_code_value(uint16_t code);

}  // namespace ptdp::kref
