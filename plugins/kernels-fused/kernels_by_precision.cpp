#include "kernels_by_precision.hpp"

namespace ptdp::fused {

// Each variant's factory (kernels_fused.cpp, compiled under either namespace; inline there, so
// here too, and named in full).
inline namespace bf16_activations {
std::unique_ptr<LayerKernels> make_kernels_fused(const PluginContext& context);
}
inline namespace fp16_activations {
std::unique_ptr<LayerKernels> make_kernels_fused(const PluginContext& context);
}

KernelsByPrecision::KernelsByPrecision(const PluginContext& context)
    : bf16_(bf16_activations::make_kernels_fused(context)),
      fp16_(fp16_activations::make_kernels_fused(context)),
      active_(bf16_.get()) {}

void KernelsByPrecision::bind(const KernelsBinding& binding) {
  LayerKernels* chosen = binding.working == DType::F16 ? fp16_.get() : bf16_.get();
  chosen->bind(binding);
  active_ = chosen;
}

}  // namespace ptdp::fused
