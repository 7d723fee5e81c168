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

TEST(HostReduce, RefusesTypesItCannotReduce) {
  EXPECT_TRUE(host_reducible(DType::F32));
  EXPECT_TRUE(host_reducible(DType::BF16));
  EXPECT_FALSE(host_reducible(DType::F16));
  EXPECT_FALSE(host_reducible(DType::U8));
  uint16_t a = 0, b = 0;
  EXPECT_THROW(host_reduce(&a, &b, 1, DType::F16, ReduceOp::Sum), Error);
}

}  // namespace
}  // namespace ptdp
