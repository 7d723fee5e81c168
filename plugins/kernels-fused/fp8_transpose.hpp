#pragma once
// The transpose of an FP8 matrix, byte for byte: the weight copy that an input-gradient GEMM reads
// ([in, out]), made from the one the optimizer step wrote as stored ([out, in];
// fp8_update_copy.hpp), reading one byte an element where a cast from the fp32 master reads four.
#include "fp8_cast.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// out_t[c, r] = x[r, c] for x [rows, cols]; rows and cols multiples of 16, both 16-byte aligned.
void fp8_transpose(const fp8* x, int64_t rows, int64_t cols, fp8* out_t, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
