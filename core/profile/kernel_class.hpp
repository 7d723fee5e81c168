#pragma once
// What a piece of device work is, for the profile's table: kernels are told apart by name (a
// library's naming scheme, or the function name of one of kernels-fused's kernels), copies and
// memsets by kind. A name no rule knows is Other; the report lists the largest of those by name.
#include <string>

#include <ptdp/device_profiler.hpp>

namespace ptdp {

enum class KernelClass {
  Gemm,            // cuBLAS / cuBLASLt (their epilogues included)
  FlashAttention,  // cuDNN's fused attention
  Softmax,         // the unfused attention's scale + mask + softmax
  Adam,
  BiasGelu,
  LayerNorm,
  BiasDropoutAdd,
  BiasGrad,        // bias gradients as column sums
  Fp8Cast,         // FP8 casts (with their transposes) and the amaxes their scales come from
  GradNorm,
  CrossEntropy,
  Embedding,
  Collectives,     // NCCL's kernels
  Copies,          // copies and memsets
  Other,
};
inline constexpr int kKernelClassCount = static_cast<int>(KernelClass::Other) + 1;

const char* kernel_class_name(KernelClass c);
KernelClass classify(const DeviceActivity& activity);

// The function's own name in a demangled signature: "column_sum_kernel" from
// "void ptdp::fused::(anonymous namespace)::column_sum_kernel<8>(const __nv_bfloat16*, ...)".
std::string kernel_function_name(const std::string& demangled);

}  // namespace ptdp
