#include "reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ptdp::comm_ucx {

namespace {

template <class T>
void combine(T* acc, const T* in, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      for (size_t i = 0; i < count; ++i) acc[i] += in[i];
      return;
    case ReduceOp::Max:
      for (size_t i = 0; i < count; ++i) acc[i] = std::max(acc[i], in[i]);
      return;
    case ReduceOp::Min:
      for (size_t i = 0; i < count; ++i) acc[i] = std::min(acc[i], in[i]);
      return;
  }
}

float bf16_to_float(uint16_t v) {
  uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

void combine_bf16(uint16_t* acc, const uint16_t* in, size_t count, ReduceOp op) {
  constexpr size_t kBlock = 1024;
  float a[kBlock], b[kBlock];
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t n = std::min(kBlock, count - start);
    for (size_t i = 0; i < n; ++i) a[i] = bf16_to_float(acc[start + i]), b[i] = bf16_to_float(in[start + i]);
    combine(a, b, n, op);
    for (size_t i = 0; i < n; ++i) acc[start + i] = float_to_bf16(a[i]);
  }
}

}  // namespace

bool reducible(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::I32 || dtype == DType::I64;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

void reduce_into(void* acc, const void* in, size_t count, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::F32: return combine(static_cast<float*>(acc), static_cast<const float*>(in), count, op);
    case DType::I32: return combine(static_cast<int32_t*>(acc), static_cast<const int32_t*>(in), count, op);
    case DType::I64: return combine(static_cast<int64_t*>(acc), static_cast<const int64_t*>(in), count, op);
    case DType::BF16:
      return combine_bf16(static_cast<uint16_t*>(acc), static_cast<const uint16_t*>(in), count, op);
    default: break;
  }
  throw Error(std::string("comm-ucx: cannot reduce ") + dtype_name(dtype));
}

}  // namespace ptdp::comm_ucx
