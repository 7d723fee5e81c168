// The FP8 emulation against the formats' own tables: every 8-bit code of E4M3 and E5M2 decoded
// from its sign, exponent and mantissa bits, and what rounding must do between and beyond them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "fp8_format.hpp"

namespace ptdp::test {
namespace {

using kref::Fp8Format;
using kref::fp8_code_value;
using kref::kE4M3;
using kref::kE5M2;
using kref::round_to_fp8;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The finite non-negative values of a format, ascending, with the code of each.
std::vector<std::pair<float, int>> positive_grid(const Fp8Format& format) {
  std::vector<std::pair<float, int>> grid;
  for (int code = 0; code < 128; ++code) {
    const float v = fp8_code_value(static_cast<uint8_t>(code), format);
    if (std::isfinite(v)) grid.emplace_back(v, code);
  }
  return grid;
}

TEST(Fp8Format, TheTablesHaveTheFormatsCountsAndExtremes) {
  int e4m3_finite = 0, e4m3_nan = 0, e5m2_finite = 0, e5m2_nan = 0, e5m2_inf = 0;
  for (int code = 0; code < 256; ++code) {
    const float a = fp8_code_value(static_cast<uint8_t>(code), kE4M3);
    const float b = fp8_code_value(static_cast<uint8_t>(code), kE5M2);
    (std::isnan(a) ? e4m3_nan : e4m3_finite)++;
    if (std::isnan(b)) e5m2_nan++;
    else if (std::isinf(b)) e5m2_inf++;
    else e5m2_finite++;
  }
  EXPECT_EQ(e4m3_finite, 254);  // S.1111.111 is NaN, there is no infinity
  EXPECT_EQ(e4m3_nan, 2);
  EXPECT_EQ(e5m2_finite, 248);
  EXPECT_EQ(e5m2_inf, 2);
  EXPECT_EQ(e5m2_nan, 6);
  EXPECT_EQ(fp8_code_value(0x7E, kE4M3), 448.0f);
  EXPECT_EQ(fp8_code_value(0x01, kE4M3), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(fp8_code_value(0x08, kE4M3), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(fp8_code_value(0x38, kE4M3), 1.0f);
  EXPECT_EQ(fp8_code_value(0x7B, kE5M2), 57344.0f);
  EXPECT_EQ(fp8_code_value(0x01, kE5M2), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_code_value(0x04, kE5M2), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp8_code_value(0x3C, kE5M2), 1.0f);
  EXPECT_EQ(fp8_code_value(0xBC, kE5M2), -1.0f);
  EXPECT_EQ(kE4M3.max_finite, positive_grid(kE4M3).back().first);
  EXPECT_EQ(kE5M2.max_finite, positive_grid(kE5M2).back().first);
}

TEST(Fp8Format, EveryValueOfTheTableRoundsToItself) {
  for (const Fp8Format* format : {&kE4M3, &kE5M2})
    for (int code = 0; code < 256; ++code) {
      const float v = fp8_code_value(static_cast<uint8_t>(code), *format);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(bits(round_to_fp8(v, *format)), bits(v)) << "code " << code << " value " << v;
    }
}

TEST(Fp8Format, BetweenTwoValuesTheNearerWinsAndTiesGoToTheEvenCode) {
  for (const Fp8Format* format : {&kE4M3, &kE5M2}) {
    const auto grid = positive_grid(*format);
    for (size_t i = 0; i + 1 < grid.size(); ++i) {
      const float lo = grid[i].first, hi = grid[i + 1].first;
      const float mid = lo + (hi - lo) / 2;  // exact in float: the grid is far coarser
      const float even = grid[i].second % 2 == 0 ? lo : hi;
      EXPECT_EQ(round_to_fp8(mid, *format), even) << "tie between " << lo << " and " << hi;
      EXPECT_EQ(round_to_fp8(-mid, *format), -even);
      EXPECT_EQ(round_to_fp8(std::nextafter(mid, lo), *format), lo);
      EXPECT_EQ(round_to_fp8(std::nextafter(mid, hi), *format), hi);
    }
  }
}

TEST(Fp8Format, SaturatesBeyondTheLargestValueAndKeepsNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(round_to_fp8(449.0f, kE4M3), 448.0f);
  EXPECT_EQ(round_to_fp8(1e30f, kE4M3), 448.0f);
  EXPECT_EQ(round_to_fp8(-inf, kE4M3), -448.0f);
  EXPECT_EQ(round_to_fp8(inf, kE5M2), 57344.0f);
  EXPECT_EQ(round_to_fp8(-61440.0f, kE5M2), -57344.0f);  // would round to 2^16, which E5M2 lacks as a finite value
  EXPECT_TRUE(std::isnan(round_to_fp8(std::numeric_limits<float>::quiet_NaN(), kE4M3)));
  EXPECT_TRUE(std::isnan(round_to_fp8(std::numeric_limits<float>::quiet_NaN(), kE5M2)));
  // Below half the smallest subnormal, values flush to zero with their sign.
  EXPECT_EQ(bits(round_to_fp8(std::ldexp(1.0f, -11), kE4M3)), bits(0.0f));
  EXPECT_EQ(bits(round_to_fp8(-std::ldexp(1.0f, -18), kE5M2)), bits(-0.0f));
}

TEST(Fp8Format, ScalesMapTheAmaxToTheFormatsLargestValue) {
  EXPECT_EQ(fp8_scale(448.0f, kE4M3Max, 0), 1.0f);
  EXPECT_EQ(fp8_scale(3.5f, kE4M3Max, 0), 128.0f);
  EXPECT_EQ(fp8_scale(3.5f, kE4M3Max, 2), 32.0f);
  EXPECT_EQ(fp8_scale(0.0f, kE5M2Max, 0), 1.0f);  // nothing to scale: an all-zero tensor, or no history
  EXPECT_EQ(fp8_scale(1e-40f, kE5M2Max, 0), std::numeric_limits<float>::max());
  EXPECT_TRUE(std::isnan(fp8_scale(std::numeric_limits<float>::infinity(), kE4M3Max, 0)));
  EXPECT_EQ(amax_update(2.0f, -3.0f), 3.0f);
  EXPECT_TRUE(std::isnan(amax_update(2.0f, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(amax_update(std::numeric_limits<float>::quiet_NaN(), 5.0f)));
}

}  // namespace
}  // namespace ptdp::test
