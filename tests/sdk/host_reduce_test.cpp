// ptdp/host_reduce.hpp: what every communicator reducing on the CPU computes.
#include "ptdp/host_reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace ptdp {
namespace {

uint16_t bf16(float f) {  // truncation: exact for the values used here
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

float from_bf16(uint16_t v) {
  uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

template <class T>
std::vector<T> reduced(std::vector<T> acc, const std::vector<T>& in, DType dtype, ReduceOp op) {
  host_reduce(acc.data(), in.data(), acc.size(), dtype, op);
  return acc;
}

TEST(HostReduce, F32) {
  const std::vector<float> a = {1.5f, -2.0f, 0.0f}, b = {2.0f, -3.0f, -0.5f};
  EXPECT_EQ(reduced(a, b, DType::F32, ReduceOp::Sum), (std::vector<float>{3.5f, -5.0f, -0.5f}));
  EXPECT_EQ(reduced(a, b, DType::F32, ReduceOp::Max), (std::vector<float>{2.0f, -2.0f, 0.0f}));
  EXPECT_EQ(reduced(a, b, DType::F32, ReduceOp::Min), (std::vector<float>{1.5f, -3.0f, -0.5f}));
}

TEST(HostReduce, Integers) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_EQ(reduced<int64_t>({big, -big}, {big, 1}, DType::I64, ReduceOp::Sum), (std::vector<int64_t>{2 * big, 1 - big}));
  EXPECT_EQ(reduced<int64_t>({big, -big}, {1, 1}, DType::I64, ReduceOp::Max), (std::vector<int64_t>{big, 1}));
  EXPECT_EQ(reduced<int32_t>({7, -7}, {-8, 9}, DType::I32, ReduceOp::Min), (std::vector<int32_t>{-8, -7}));
}

TEST(HostReduce, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between the bf16 neighbours 1 and 1 + 2^-7: ties go to even (1).
  std::vector<uint16_t> acc = {bf16(1.0f), bf16(256.0f), bf16(-3.0f)};
  const std::vector<uint16_t> in = {bf16(0.00390625f), bf16(1.0f), bf16(2.0f)};
  host_reduce(acc.data(), in.data(), acc.size(), DType::BF16, ReduceOp::Sum);
  EXPECT_EQ(from_bf16(acc[0]), 1.0f);
  EXPECT_EQ(from_bf16(acc[1]), 256.0f) << "257 is not a bf16 value; it rounds to even 256";
  EXPECT_EQ(from_bf16(acc[2]), -1.0f);
  std::vector<uint16_t> nan = {bf16(std::numeric_limits<float>::quiet_NaN())};
  const std::vector<uint16_t> one = {bf16(1.0f)};
  host_reduce(nan.data(), one.data(), 1, DType::BF16, ReduceOp::Sum);
  EXPECT_TRUE(std::isnan(from_bf16(nan[0])));
}

TEST(HostReduce, Bf16LongBuffersCrossBlocks) {
  std::vector<uint16_t> acc(3000, bf16(2.0f)), in(3000, bf16(3.0f));
  host_reduce(acc.data(), in.data(), acc.size(), DType::BF16, ReduceOp::Max);
  for (uint16_t v : acc) ASSERT_EQ(from_bf16(v), 3.0f);
}

// IEEE half codes: 1.0 = 0x3c00, 65504 (the largest) = 0x7bff, infinity = 0x7c00, 2^-14 (the
// smallest normal) = 0x0400, 2^-24 (the smallest subnormal) = 0x0001.
TEST(HostReduce, F16SumsRoundToNearestEvenOnTheHalfGrid) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -26)), 0x0000);  // a quarter of the smallest: to zero
  EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 spacings: a tie, to the even 2
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);        // a tie: to the even 1.0
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);        // a tie: to the even mantissa 2
  EXPECT_EQ(float_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);  // rounds beyond 65504: infinity, as on a GPU
  for (uint16_t code : {0x3c00, 0x7bff, 0x0400, 0x0001, 0x8001, 0x3555, 0x7c00, 0xfc00})
    EXPECT_EQ(float_to_f16(f16_to_float(code)), code) << std::hex << code;
  EXPECT_EQ(f16_to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(f16_to_float(0x7e00)));

  std::vector<uint16_t> acc = {0x3c00, 0x7bff, 0x0001}, in = {0x3c00, 0x7bff, 0x0001};
  host_reduce(acc.data(), in.data(), acc.size(), DType::F16, ReduceOp::Sum);
  EXPECT_EQ(acc, (std::vector<uint16_t>{0x4000, 0x7c00, 0x0002}));  // 2, overflow to infinity, 2^-23
  std::vector<uint16_t> nan = {0x7e00};
  const std::vector<uint16_t> one = {0x3c00};
  host_reduce(nan.data(), one.data(), 1, DType::F16, ReduceOp::Max);
  EXPECT_TRUE(std::isnan(f16_to_float(nan[0])));
}

TEST(HostReduce, RefusesTypesItCannotReduce) {
  EXPECT_TRUE(host_reducible(DType::F32));
  EXPECT_TRUE(host_reducible(DType::BF16));
  EXPECT_TRUE(host_reducible(DType::F16));
  EXPECT_FALSE(host_reducible(DType::U8));
  EXPECT_FALSE(host_reducible(DType::U16));
  uint16_t a = 0, b = 0;
  EXPECT_THROW(host_reduce(&a, &b, 1, DType::U16, ReduceOp::Sum), Error);
}

}  // namespace
}  // namespace ptdp
