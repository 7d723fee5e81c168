#include "fp16_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ptdp::kref {

float round_to_fp16(float value) {
  if (!std::isfinite(value) || value == 0.0f) return value;
  const float magnitude = std::fabs(value);
  // The spacing of half values around `magnitude`: 2^(e - 10) for its exponent e, never below
  // the subnormals' 2^-24. Dividing by a power of two is exact, and nearbyint rounds ties to even
  // in the default rounding mode. A tie at the top (65520) goes to the even 2^16, beyond the
  // format: infinity.
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  const int e = std::max(exponent - 1, kHalfMinNormalExponent);
  const float spacing = std::ldexp(1.0f, e - kHalfMantissaBits);
  const float rounded = std::nearbyint(magnitude / spacing) * spacing;
  return std::copysign(rounded > kHalfMax ? std::numeric_limits<float>::infinity() : rounded, value);
}

void round_to_fp16(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = round_to_fp16(x[i]);
}

float fp16_code_value(uint16_t code) {
  const bool negative = (code & 0x8000) != 0;
  const int exponent_field = (code >> kHalfMantissaBits) & 0x1f;
  const int mantissa = code & ((1 << kHalfMantissaBits) - 1);
  float magnitude;
  if (exponent_field == 0x1f)
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  else if (exponent_field == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), kHalfMinNormalExponent - kHalfMantissaBits);
  else
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / (1 << kHalfMantissaBits), exponent_field - 15);
  return negative ? -magnitude : magnitude;
}

}  // namespace ptdp::kref
