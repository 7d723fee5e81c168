#pragma once
// Whether the kernels plugin runs the precision the manifest asks for: its activation type must
// be precision.params, except that "fp16" needs a plugin (of ABI 1.7 or later) that declares
// PrecisionSupport::Fp16, whatever its activation type; FP8 needs one that declares it for the
// device it will run on. `validate` and `run` refuse alike, in one line.
#include <cstdint>

#include <ptdp/fp8.hpp>
#include <ptdp/layer_kernels.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// Throws Error naming the key and the plugin when `kernels` cannot run config.precision.
void check_kernels_precision(const RunConfig& config, uint32_t kernels_abi_minor, const LayerKernels& kernels);

// The manifest's FP8 recipe as the kernels are handed it.
Fp8Recipe fp8_recipe_of(const RunConfig& config);

// precision.params as the kernels are handed it (KernelsBinding::working).
DType working_type_of(const RunConfig& config);

}  // namespace ptdp
