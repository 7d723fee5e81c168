#include "fp16_format.hpp"

#include <cmath>
#include <limits>

#include "ptdp/float16_bits.hpp"

namespace ptdp::kref {

// The SDK's conversion (ptdp/float16_bits.hpp) there and back: the same bits as the host
// reductions and a GPU's conversion; fp16_code_value below, written from the format's
// definition, is what the tests hold it to, code by code.
float round_to_fp16(float value) { return f16_to_float(float_to_f16(value)); }

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
