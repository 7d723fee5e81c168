#pragma once
// Whether the kernels plugin runs the activation-memory features the manifest asks for:
// parallel.sequence_parallel and parallel.recompute = "selective" need a plugin (of ABI 1.8 or
// later) that declares them (ptdp/activation_recompute.hpp). `validate` and `run` refuse alike,
// in one line naming the key and the plugin.
#include <cstdint>

#include <ptdp/layer_kernels.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// Throws Error naming the key and the plugin when `kernels` cannot run what config.parallel asks.
void check_kernels_activation_memory(const RunConfig& config, uint32_t kernels_abi_minor, const LayerKernels& kernels);

// parallel.recompute_modules as the kernels are handed it (KernelsBinding::recompute_modules):
// 0 unless parallel.recompute = "selective".
uint32_t recompute_modules_of(const RunConfig& config);

}  // namespace ptdp
