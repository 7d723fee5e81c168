#pragma once
// What a kernels plugin can run besides its activation type (since ABI 1.7), as bits of
// LayerKernels::precisions(). The core refuses a manifest that asks for what its kernels plugin
// does not declare, in one line naming the key and the plugin.
#include <cstdint>

namespace ptdp {

enum class PrecisionSupport : uint32_t {
  Fp8Hybrid = 1u << 0,  // precision.fp8 = "hybrid" with both scaling recipes (ptdp/fp8.hpp)
  // precision.params = "fp16": the backend stores what it would keep in its working type in IEEE
  // half when KernelsBinding::working is DType::F16, whatever its activation_dtype(), and honours
  // AdamStep::loss_scale. The core scales the loss and skips the steps whose gradients overflow.
  Fp16 = 1u << 1,
};
inline uint32_t precision_bit(PrecisionSupport p) { return static_cast<uint32_t>(p); }

}  // namespace ptdp
