#pragma once
// The 16-bit type kernels-fused keeps activations, their gradients and the GEMMs' working weights
// in: bf16, or IEEE half under precision.params = "fp16". Every source of the plugin is compiled
// once for each (CMakeLists.txt sets PTDP_FUSED_FP16 and the namespace PTDP_FUSED_ACTIVATIONS), so
// that one plugin holds both and picks at bind (kernels_by_precision.cpp); the kernels read and
// write the type through vec.cuh's conversions and compute in fp32 either way.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

#include "ptdp/tensor.hpp"

#ifndef PTDP_FUSED_FP16
#define PTDP_FUSED_FP16 0
#endif

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

#if PTDP_FUSED_FP16
using act_t = __half;
using act2_t = __half2;
inline constexpr DType kActDType = DType::F16;
inline constexpr cudaDataType_t kActCudaType = CUDA_R_16F;
inline constexpr const char* kActName = "fp16";
#else
using act_t = __nv_bfloat16;
using act2_t = __nv_bfloat162;
inline constexpr DType kActDType = DType::BF16;
inline constexpr cudaDataType_t kActCudaType = CUDA_R_16BF;
inline constexpr const char* kActName = "bf16";
#endif

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
