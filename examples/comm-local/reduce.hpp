#pragma once
// Element-wise sum, max and min of one rank's contribution into an accumulator, on the CPU.
#include <cstddef>

#include <ptdp/communicator.hpp>

namespace comm_local {

// f32, bf16, i32 and i64; the others are refused before anything moves.
bool reducible(ptdp::DType dtype);

// acc[i] = acc[i] op in[i] for `count` elements. bf16 is combined in f32 and rounded to the
// nearest even bf16, so every rank that combines the same values in the same order gets the
// same bits.
void reduce_into(void* acc, const void* in, size_t count, ptdp::DType dtype, ptdp::ReduceOp op);

}  // namespace comm_local
