#include "reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace comm_local {

namespace {

template <class T>
T combine(T a, T b, ptdp::ReduceOp op) {
  switch (op) {
    case ptdp::ReduceOp::Sum: return static_cast<T>(a + b);
    case ptdp::ReduceOp::Max: return std::max(a, b);
    case ptdp::ReduceOp::Min: return std::min(a, b);
  }
  return a;
}

template <class T>
void combine_all(T* acc, const T* in, size_t count, ptdp::ReduceOp op) {
  for (size_t i = 0; i < count; ++i) acc[i] = combine(acc[i], in[i], op);
}

float bf16_to_float(uint16_t v) {
  const uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

void combine_bf16(uint16_t* acc, const uint16_t* in, size_t count, ptdp::ReduceOp op) {
  for (size_t i = 0; i < count; ++i) acc[i] = float_to_bf16(combine(bf16_to_float(acc[i]), bf16_to_float(in[i]), op));
}

}  // namespace

bool reducible(ptdp::DType dtype) {
  using ptdp::DType;
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::I32 || dtype == DType::I64;
}

void reduce_into(void* acc, const void* in, size_t count, ptdp::DType dtype, ptdp::ReduceOp op) {
  using ptdp::DType;
  switch (dtype) {
    case DType::F32: return combine_all(static_cast<float*>(acc), static_cast<const float*>(in), count, op);
    case DType::I32: return combine_all(static_cast<int32_t*>(acc), static_cast<const int32_t*>(in), count, op);
    case DType::I64: return combine_all(static_cast<int64_t*>(acc), static_cast<const int64_t*>(in), count, op);
    case DType::BF16: return combine_bf16(static_cast<uint16_t*>(acc), static_cast<const uint16_t*>(in), count, op);
    default: break;
  }
  throw ptdp::Error(std::string("comm-local cannot reduce ") + ptdp::dtype_name(dtype));
}

}  // namespace comm_local
