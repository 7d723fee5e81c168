#pragma once
// How ptdp's element types and reductions map onto NCCL's.
#include <nccl.h>

#include <optional>

#include "ptdp/communicator.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp::comm_nccl {

// NCCL type of a ptdp dtype; nullopt for the ones comm-nccl does not move (u16, u8).
std::optional<ncclDataType_t> nccl_data_type(DType dtype);
// The names of the dtypes nccl_data_type() accepts, for error messages.
const char* supported_dtype_names();

std::optional<ncclRedOp_t> nccl_reduce_op(ReduceOp op);
const char* reduce_op_name(ReduceOp op);

}  // namespace ptdp::comm_nccl
