#pragma once
// Element-wise reductions on host memory, for a communicator's collectives: acc[i] = op(acc[i],
// in[i]). Every communicator that reduces on the CPU must give the same bits, so this is written
// once: bf16 is combined in fp32 and rounded to the nearest even bf16 (NaN stays NaN), and ranks
// that combine the same values in the same order agree exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "ptdp/communicator.hpp"
#include "ptdp/error.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

// f32, bf16, i32 and i64: what a collective can reduce; refuse the others before anything moves.
inline bool host_reducible(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::I32 || dtype == DType::I64;
}

namespace host_reduce_detail {

template <class T>
T combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return static_cast<T>(a + b);
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
  }
  return a;
}

template <class T>
void combine_all(T* acc, const T* in, size_t count, ReduceOp op) {
  for (size_t i = 0; i < count; ++i) acc[i] = combine(acc[i], in[i], op);
}

inline float bf16_to_float(uint16_t v) {
  const uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace host_reduce_detail

// acc[i] = op(acc[i], in[i]) for `count` elements of `dtype`; throws ptdp::Error for a dtype
// host_reducible() refuses.
inline void host_reduce(void* acc, const void* in, size_t count, DType dtype, ReduceOp op) {
  using namespace host_reduce_detail;
  switch (dtype) {
    case DType::F32: return combine_all(static_cast<float*>(acc), static_cast<const float*>(in), count, op);
    case DType::I32: return combine_all(static_cast<int32_t*>(acc), static_cast<const int32_t*>(in), count, op);
    case DType::I64: return combine_all(static_cast<int64_t*>(acc), static_cast<const int64_t*>(in), count, op);
    case DType::BF16: {
      auto* a = static_cast<uint16_t*>(acc);
      const auto* b = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < count; ++i) a[i] = float_to_bf16(combine(bf16_to_float(a[i]), bf16_to_float(b[i]), op));
      return;
    }
    default: break;
  }
  throw Error(std::string("cannot reduce ") + dtype_name(dtype) + " on the host (f32, bf16, i32, i64 only)");
}

}  // namespace ptdp
