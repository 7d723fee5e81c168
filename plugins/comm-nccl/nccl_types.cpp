#include "nccl_types.hpp"

namespace ptdp::comm_nccl {

std::optional<ncclDataType_t> nccl_data_type(DType dtype) {
  switch (dtype) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U16:
    case DType::U8: break;
  }
  return std::nullopt;
}

const char* supported_dtype_names() { return "f32, bf16, f16, i32, i64"; }

std::optional<ncclRedOp_t> nccl_reduce_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  return std::nullopt;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "unknown";
}

}  // namespace ptdp::comm_nccl
