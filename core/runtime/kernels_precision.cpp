#include "runtime/kernels_precision.hpp"

#include <fmt/format.h>

namespace ptdp {

void check_kernels_precision(const RunConfig& config, uint32_t kernels_abi_minor, const LayerKernels& kernels) {
  const std::string& name = config.plugins.kernels;
  const char* computes_in = kernels.activation_dtype() == DType::BF16 ? "bf16" : "fp32";
  // A plugin built before ABI 1.7 has no precisions() to ask: it runs neither fp16 nor FP8.
  const uint32_t declared = kernels_abi_minor >= 7 ? kernels.precisions() : 0;
  const char* on_device = kernels.device().kind == MemoryKind::Cuda ? " on this device" : "";
  if (config.precision.fp16()) {
    // fp16 is a recipe of its own (half storage and loss scaling), whatever type the plugin
    // computes in otherwise.
    if ((declared & precision_bit(PrecisionSupport::Fp16)) == 0)
      throw Error(fmt::format("precision.params = \"fp16\" but plugins.kernels '{}' runs no fp16 training{}; set "
                              "precision.params = \"{}\"",
                              name, on_device, computes_in));
  } else if (config.precision.params != computes_in) {
    throw Error(fmt::format("precision.params = \"{}\" but plugins.kernels '{}' computes in {}; set precision.params = \"{}\"",
                            config.precision.params, name, computes_in, computes_in));
  }
  if (!config.precision.fp8_on()) return;
  if ((declared & precision_bit(PrecisionSupport::Fp8Hybrid)) == 0)
    throw Error(fmt::format("precision.fp8 = \"{}\" but plugins.kernels '{}' runs no FP8 GEMMs{}; set precision.fp8 = \"off\"",
                            config.precision.fp8, name, on_device));
}

DType working_type_of(const RunConfig& config) {
  const std::string& params = config.precision.params;
  return params == "fp16" ? DType::F16 : params == "bf16" ? DType::BF16 : DType::F32;
}

Fp8Recipe fp8_recipe_of(const RunConfig& config) {
  const auto& p = config.precision;
  Fp8Recipe recipe;
  recipe.enabled = p.fp8_on();
  recipe.scaling = p.fp8_recipe == "delayed" ? Fp8Scaling::Delayed : Fp8Scaling::Tensorwise;
  recipe.amax_history = p.fp8_amax_history;
  recipe.amax_compute = p.fp8_amax_compute == "most_recent" ? Fp8AmaxCompute::MostRecent : Fp8AmaxCompute::Max;
  recipe.margin = p.fp8_margin;
  recipe.bf16_first_blocks = p.fp8_bf16_first_blocks;
  recipe.bf16_last_blocks = p.fp8_bf16_last_blocks;
  return recipe;
}

}  // namespace ptdp
