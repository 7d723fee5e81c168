#pragma once
// Element-wise reductions on host memory for the collectives.
#include <cstddef>

#include "ptdp/communicator.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp::comm_ucx {

bool reducible(DType dtype);
const char* reduce_op_name(ReduceOp op);
// acc[i] = op(acc[i], in[i]) for `count` elements.
void reduce_into(void* acc, const void* in, size_t count, DType dtype, ReduceOp op);

}  // namespace ptdp::comm_ucx
