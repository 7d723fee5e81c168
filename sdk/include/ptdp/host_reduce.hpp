#pragma once
// Element-wise reductions on host memory, for a communicator's collectives: acc[i] = op(acc[i],
// in[i]). Every communicator that reduces on the CPU must give the same bits, so this is written
// once: bf16 and fp16 are combined in fp32 and rounded to the nearest even value of their format
// (NaN stays NaN; an fp16 sum beyond 65504 becomes infinite, as a GPU's conversion makes it), and
// ranks that combine the same values in the same order agree exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "ptdp/communicator.hpp"
#include "ptdp/error.hpp"
#include "ptdp/float16_bits.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

// f32, bf16, f16, i32 and i64: what a collective can reduce; refuse the others before anything
// moves.
inline bool host_reducible(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16 || dtype == DType::I32 ||
         dtype == DType::I64;
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

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void combine_all_16bit(void* acc, const void* in, size_t count, ReduceOp op) {
  auto* a = static_cast<uint16_t*>(acc);
  const auto* b = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < count; ++i) a[i] = FromFloat(combine(ToFloat(a[i]), ToFloat(b[i]), op));
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
    case DType::BF16: return combine_all_16bit<bf16_to_float, float_to_bf16>(acc, in, count, op);
    case DType::F16: return combine_all_16bit<f16_to_float, float_to_f16>(acc, in, count, op);
    default: break;
  }
  throw Error(std::string("cannot reduce ") + dtype_name(dtype) + " on the host (f32, bf16, f16, i32, i64 only)");
}

}  // namespace ptdp
