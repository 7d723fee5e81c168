// The fp16 emulation against the format's own table: every 16-bit code of IEEE half decoded
// from its sign, exponent and mantissa bits, and what rounding must do between and beyond them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fp16_format.hpp"

namespace ptdp::test {
namespace {

using kref::fp16_code_value;
using kref::kHalfMax;
using kref::round_to_fp16;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The finite non-negative values of half, ascending (codes 0 .. 0x7BFF are in value order).
std::vector<float> positive_grid() {
  std::vector<float> grid;
  for (int code = 0; code < 0x7C00; ++code) grid.push_back(fp16_code_value(static_cast<uint16_t>(code)));
  return grid;
}

const float kInf = std::numeric_limits<float>::infinity();

TEST(Fp16Format, TheTableHasTheFormatsCountsAndExtremes) {
  int finite = 0, nan = 0, inf = 0;
  for (int code = 0; code < 0x10000; ++code) {
    const float v = fp16_code_value(static_cast<uint16_t>(code));
    if (std::isnan(v)) nan++;
    else if (std::isinf(v)) inf++;
    else finite++;
  }
  EXPECT_EQ(finite, 2 * 0x7C00);  // both signs of every code below the all-ones exponent
  EXPECT_EQ(inf, 2);
  EXPECT_EQ(nan, 2 * 1023);
  EXPECT_EQ(fp16_code_value(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_code_value(0x7BFF), kHalfMax);
  EXPECT_EQ(fp16_code_value(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_code_value(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(fp16_code_value(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(fp16_code_value(0x3C00), 1.0f);
  EXPECT_EQ(fp16_code_value(0x3C01), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(fp16_code_value(0xC000), -2.0f);
  EXPECT_EQ(fp16_code_value(0x7C00), kInf);
  EXPECT_EQ(fp16_code_value(0xFC00), -kInf);
  const std::vector<float> grid = positive_grid();
  for (size_t i = 1; i < grid.size(); ++i) ASSERT_LT(grid[i - 1], grid[i]) << "code " << i;
}

TEST(Fp16Format, EveryValueOfTheTableRoundsToItself) {
  for (int code = 0; code < 0x10000; ++code) {
    const float v = fp16_code_value(static_cast<uint16_t>(code));
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(round_to_fp16(v))) << "code " << code;
      continue;
    }
    EXPECT_EQ(bits(round_to_fp16(v)), bits(v)) << "code " << code << " value " << v;  // -0 stays -0
  }
}

TEST(Fp16Format, BetweenTwoValuesTheNearestWinsAndTiesGoToTheEvenCode) {
  const std::vector<float> grid = positive_grid();
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    const float lo = grid[i], hi = grid[i + 1];
    // Half's spacing is at least 2^-24 and its values have 11 significant bits: the midpoint and
    // its float neighbours are exact in float.
    const float mid = lo + (hi - lo) / 2;
    const float even = (i % 2 == 0) ? lo : hi;  // code i is even when its last mantissa bit is 0
    EXPECT_EQ(round_to_fp16(mid), even) << "tie between " << lo << " and " << hi;
    EXPECT_EQ(round_to_fp16(-mid), -even) << "tie between " << -lo << " and " << -hi;
    EXPECT_EQ(round_to_fp16(std::nextafter(mid, 0.0f)), lo) << "just below the middle of " << lo << ", " << hi;
    EXPECT_EQ(round_to_fp16(std::nextafter(mid, kInf)), hi) << "just above the middle of " << lo << ", " << hi;
  }
}

TEST(Fp16Format, FromTheTopTieOnTheValuesOverflowToInfinity) {
  EXPECT_EQ(round_to_fp16(65504.0f), 65504.0f);
  EXPECT_EQ(round_to_fp16(65519.996f), 65504.0f);  // below the tie with 2^16
  EXPECT_EQ(round_to_fp16(65520.0f), kInf);        // the tie goes to the even 2^16: beyond the format
  EXPECT_EQ(round_to_fp16(-65520.0f), -kInf);
  EXPECT_EQ(round_to_fp16(1e6f), kInf);
  EXPECT_EQ(round_to_fp16(std::numeric_limits<float>::max()), kInf);
  EXPECT_EQ(round_to_fp16(-std::numeric_limits<float>::max()), -kInf);
  EXPECT_EQ(round_to_fp16(kInf), kInf);
  EXPECT_EQ(round_to_fp16(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(round_to_fp16(std::nanf(""))));
}

TEST(Fp16Format, SubnormalsAreKeptDownToTwoToTheMinus24) {
  const float smallest = std::ldexp(1.0f, -24);
  EXPECT_EQ(round_to_fp16(smallest), smallest);
  EXPECT_EQ(round_to_fp16(std::ldexp(3.0f, -24)), std::ldexp(3.0f, -24));
  EXPECT_EQ(round_to_fp16(std::ldexp(1.0f, -25)), 0.0f);                 // the tie with 0 goes to 0
  EXPECT_EQ(round_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), smallest);
  EXPECT_EQ(round_to_fp16(std::ldexp(1.5f, -24)), std::ldexp(2.0f, -24));  // tie to the even 2 · 2^-24
  EXPECT_EQ(round_to_fp16(std::ldexp(2.5f, -24)), std::ldexp(2.0f, -24));
  EXPECT_EQ(bits(round_to_fp16(-std::ldexp(1.0f, -26))), bits(-0.0f));
  EXPECT_EQ(round_to_fp16(std::numeric_limits<float>::denorm_min()), 0.0f);
  // 1 + 2^-11 is the tie between 1 and 1 + 2^-10: to 1, whose mantissa is even.
  EXPECT_EQ(round_to_fp16(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(round_to_fp16(0.1f), fp16_code_value(0x2E66));  // 0.0999755859375, as numpy.float16(0.1)
}

TEST(Fp16Format, RoundsATensorInPlace) {
  std::vector<float> x = {1.0f + std::ldexp(1.0f, -12), 70000.0f, -3.0f, std::ldexp(1.0f, -30)};
  kref::round_to_fp16(x.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(x, (std::vector<float>{1.0f, kInf, -3.0f, 0.0f}));
}

}  // namespace
}  // namespace ptdp::test
