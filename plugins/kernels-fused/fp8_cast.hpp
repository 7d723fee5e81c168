#pragma once
// The FP8 casts of the hybrid recipe (ptdp/fp8.hpp) on the GPU: a matrix of act_t (activations,
// gradients, a weight's working copy) or of fp32 (a weight's master) scaled and rounded
// to E4M3 or E5M2 (nearest even, saturating: the conversion instruction's SATFINITE), written as it
// is and, for the GEMMs that need the other operand order, transposed, in one pass. On Hopper an
// FP8 GEMM takes both operands with their inner dimension contiguous, so a weight-gradient GEMM
// reads the transposes of the activation and of the output gradient, and an input-gradient GEMM
// the transpose of the weight.
//
// The scale is read from device memory in the kernel, so nothing waits for the host: either
// computed from an amax (tensorwise scaling; amax_of fills it, and the caller may reduce it over
// the tensor-parallel group first) or given (delayed scaling). Every cast writes the inverse of
// the scale it used, which the GEMM multiplies its product by (cuBLASLt's A/B scale pointers).
#include <cuda_fp8.h>

#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

using fp8 = __nv_fp8_storage_t;

enum class Fp8Kind { E4M3, E5M2 };

// How far apart scale inverses are kept, in floats: cuBLASLt refuses a scale pointer that is not
// aligned (one 4 bytes past a 256-byte boundary gave CUBLAS_STATUS_NOT_SUPPORTED on the H200 with
// cuBLASLt 13.0), so each sits at its own 256 bytes.
inline constexpr int kScaleStride = 64;

// Where a cast's scale comes from.
struct Fp8ScaleSource {
  const float* amax = nullptr;   // tensorwise: scale = format max / *amax / 2^margin (1 for 0)
  const float* scale = nullptr;  // delayed: *scale
  int margin = 0;
};

// Device memory an amax reduction works in: one partial per block, and a counter that must be zero
// before the first reduction (each leaves it zero again). Reductions that share it run in order.
struct Fp8AmaxScratch {
  static constexpr int kMaxBlocks = 1024;
  float* partials = nullptr;    // [kMaxBlocks]
  unsigned* counter = nullptr;
};

// *amax = the largest |value| of x[0 .. n), n a multiple of 8: NaN once any value is NaN. One
// launch: the last block to finish combines the others' partial maxima.
void fp8_amax(const act_t* x, int64_t n, float* amax, const Fp8AmaxScratch& scratch, const KernelContext& ctx);
void fp8_amax(const float* x, int64_t n, float* amax, const Fp8AmaxScratch& scratch, const KernelContext& ctx);

// out[r, c] = fp8(x[r, c] · scale) for x [rows, cols] (out may be null), out_t[c, r] the same
// values transposed (may be null); *scale_inv = 1 / scale. rows and cols are multiples of 16
// (what cuBLASLt's FP8 GEMMs take), and x, out and out_t 16-byte aligned. With `record`, *record is raised to
// the amax the scale came from (tensorwise) or to the amax of x (delayed, found in this pass).
void fp8_cast(const act_t* x, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source, fp8* out,
              fp8* out_t, float* scale_inv, float* record, const KernelContext& ctx);
void fp8_cast(const float* x, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source, fp8* out,
              fp8* out_t, float* scale_inv, float* record, const KernelContext& ctx);

// The MLP's GeLU, made by the casts of what it feeds: FC2's input gelu(pre + bias), or (with dy)
// FC1's output gradient dy · gelu'(pre + bias). pre is FC1's output; bias may be null (pre has it).
struct Fp8GeluSource {
  const act_t* pre = nullptr;
  const float* bias = nullptr;
  const act_t* dy = nullptr;
};

// The values of `gelu` cast as fp8_cast casts a matrix holding them in act_t (the same bytes),
// without storing them: so only under a given scale (source.scale; the delayed recipe). With
// dbias (the gradient only), dbias += the column sums of the values before rounding (fp32).
void fp8_cast_gelu(const Fp8GeluSource& gelu, int64_t rows, int64_t cols, Fp8Kind kind, const Fp8ScaleSource& source,
                   fp8* out, fp8* out_t, float* scale_inv, float* record, float* dbias, const KernelContext& ctx);

// Up to four pairs of device floats: *record[i] = max(*record[i], *value[i]) (NaN-propagating).
struct Fp8AmaxRecords {
  static constexpr int kMax = 4;
  float* record[kMax] = {};
  const float* value[kMax] = {};
  int count = 0;
};

// A weight's amax, found when its FP8 copy was made, recorded again for each step that reads it.
void fp8_record_amax(const Fp8AmaxRecords& records, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
