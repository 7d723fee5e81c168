#pragma once
// An FP8 copy of a parameter that the optimizer step writes as it writes the new values: under the
// delayed recipe a weight's scale is known before its values are (Fp8ScalingState gives the next
// step's scales before the optimizer step), so AdamW can round each value it makes to E4M3 where
// it is in registers, instead of a cast reading the fp32 masters back at the next forward. The
// block that reads the copy (fp8_linears.hpp) owns it; the parameter points to it.
#include <cuda_fp8.h>

#include <cstdint>

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct Fp8UpdateCopy {
  __nv_fp8_storage_t* data = nullptr;  // E4M3, as the parameter is stored
  const float* scale = nullptr;        // the scale to round under
  float* scale_inv = nullptr;          // written 1 / *scale, for the GEMMs
  float* amax = nullptr;               // written the largest |value| of the new values
  uint64_t made_from = 0;              // the parameter's values_version() the copy holds; 0: none
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
