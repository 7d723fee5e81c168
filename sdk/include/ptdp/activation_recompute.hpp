#pragma once
// What a kernels plugin runs to cut activation memory under tensor parallelism (since ABI 1.8),
// as bits of LayerKernels::activation_memory_features(), and the modules that
// parallel.recompute = "selective" may recompute, as bits of KernelsBinding::recompute_modules.
// The core refuses a manifest that asks for what its kernels plugin does not declare, in one line
// naming the key and the plugin. Korthikanti et al., arXiv 2205.05198; docs/memory.md.
#include <cstdint>
#include <string>

namespace ptdp {

enum class ActivationMemoryFeature : uint32_t {
  // parallel.sequence_parallel: activations between layers are [s/t, b, h] on each tensor rank
  // (rows [rank·s/t, (rank+1)·s/t) of the sequence) and the layers cross the tensor-parallel
  // group through the sequence-parallel regions (ptdp/tensor_parallel_regions.hpp). The
  // gradients of the parameters every tensor rank holds whole are then sums over the rank's own
  // rows only; the core sums them over the tensor group once per step.
  SequenceParallel = 1u << 0,
  // parallel.recompute = "selective": a block's forward(save=true) keeps none of what the bound
  // recompute_modules produce and recomputes it from what it kept before the backward needs it.
  SelectiveRecompute = 1u << 1,
};
inline uint32_t feature_bit(ActivationMemoryFeature f) { return static_cast<uint32_t>(f); }

// The parts of a transformer block selective recomputation may recompute (Megatron-Core's
// recompute_modules, by what they are here).
enum class RecomputeModule : uint32_t {
  CoreAttention = 1u << 0,  // softmax(q·kᵀ) and its dropout, and the context it weighs
  MlpActivation = 1u << 1,  // GeLU of FC1's output
  LayerNorm = 1u << 2,      // the outputs of the block's two LayerNorms
};
inline uint32_t module_bit(RecomputeModule m) { return static_cast<uint32_t>(m); }

inline constexpr struct {
  RecomputeModule module;
  const char* name;
} kRecomputeModules[] = {{RecomputeModule::CoreAttention, "core_attention"},
                         {RecomputeModule::MlpActivation, "mlp_activation"},
                         {RecomputeModule::LayerNorm, "layernorm"}};

// The bit of a module named as the manifest names it, or 0 for no such module.
inline uint32_t recompute_module_bit(const std::string& name) {
  for (const auto& m : kRecomputeModules)
    if (name == m.name) return module_bit(m.module);
  return 0;
}

}  // namespace ptdp
