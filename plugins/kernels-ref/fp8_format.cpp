#include "fp8_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ptdp::kref {

float round_to_fp8(float value, const Fp8Format& format) {
  if (std::isnan(value)) return value;
  const float magnitude = std::fabs(value);
  if (magnitude >= format.max_finite) return std::copysign(format.max_finite, value);
  if (magnitude == 0.0f) return value;
  // The spacing of the format's values around `magnitude`: 2^(e - mantissa bits) for its
  // exponent e, never below the subnormals' spacing. Dividing by a power of two is exact, and
  // nearbyint rounds ties to even in the default rounding mode.
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  const int e = std::max(exponent - 1, format.min_normal_exponent);
  const float spacing = std::ldexp(1.0f, e - format.mantissa_bits);
  return std::copysign(std::nearbyint(magnitude / spacing) * spacing, value);
}

float fp8_code_value(uint8_t code, const Fp8Format& format) {
  const int m_bits = format.mantissa_bits;
  const int e_bits = 7 - m_bits;
  const int bias = 1 - format.min_normal_exponent;
  const bool negative = (code & 0x80) != 0;
  const int exponent_field = (code >> m_bits) & ((1 << e_bits) - 1);
  const int mantissa = code & ((1 << m_bits) - 1);
  const int all_ones = (1 << e_bits) - 1;
  float magnitude;
  if (m_bits == 3 && exponent_field == all_ones && mantissa == (1 << m_bits) - 1) {
    magnitude = std::numeric_limits<float>::quiet_NaN();  // E4M3 has only this NaN and no infinity
  } else if (m_bits == 2 && exponent_field == all_ones) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), format.min_normal_exponent - m_bits);
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / static_cast<float>(1 << m_bits), exponent_field - bias);
  }
  return negative ? -magnitude : magnitude;
}

void cast_to_fp8(float* out, const float* in, int64_t n, float scale, const Fp8Format& format) {
  for (int64_t i = 0; i < n; ++i) out[i] = round_to_fp8(in[i] * scale, format);
}

float amax_of(const float* in, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = amax_update(amax, in[i]);
  return amax;
}

}  // namespace ptdp::kref
