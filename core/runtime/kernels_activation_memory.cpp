#include "runtime/kernels_activation_memory.hpp"

#include <fmt/format.h>

namespace ptdp {

void check_kernels_activation_memory(const RunConfig& config, uint32_t kernels_abi_minor, const LayerKernels& kernels) {
  const std::string& name = config.plugins.kernels;
  // A plugin built before ABI 1.8 has no activation_memory_features() to ask: it runs neither.
  const uint32_t declared = kernels_abi_minor >= 8 ? kernels.activation_memory_features() : 0;
  const auto& par = config.parallel;
  if (par.sequence_parallel && (declared & feature_bit(ActivationMemoryFeature::SequenceParallel)) == 0)
    throw Error(fmt::format("parallel.sequence_parallel = true but plugins.kernels '{}' runs no sequence "
                            "parallelism; set parallel.sequence_parallel = false",
                            name));
  if (par.selective_recompute() && (declared & feature_bit(ActivationMemoryFeature::SelectiveRecompute)) == 0)
    throw Error(fmt::format("parallel.recompute = \"selective\" but plugins.kernels '{}' runs no selective "
                            "recomputation; set parallel.recompute = \"full\" or \"none\"",
                            name));
}

uint32_t recompute_modules_of(const RunConfig& config) {
  if (!config.parallel.selective_recompute()) return 0;
  uint32_t bits = 0;
  for (const std::string& module : config.parallel.recompute_modules) bits |= recompute_module_bit(module);
  return bits;
}

}  // namespace ptdp
