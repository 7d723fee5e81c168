// The plugin's entry point: kernels-ref as libptdp-kernels-ref.so.
#include <ptdp/plugin.hpp>

#include "ref_kernels.hpp"

namespace {

const ptdp::ConfigKeySpec kSchema[] = {
    {"threads", ptdp::ConfigType::Int, "1", 1, 256, nullptr,
     "OpenBLAS threads per process for the GEMMs (ranks on one machine share its cores)"},
};

class KernelsRefPlugin final : public ptdp::kref::RefKernels {
 public:
  explicit KernelsRefPlugin(const ptdp::PluginContext& context)
      : RefKernels(options(context)) {}

 private:
  static ptdp::kref::RefKernelsOptions options(const ptdp::PluginContext& context) {
    if (context.config == nullptr) return {};
    return ptdp::kref::RefKernelsOptions::from_config(*context.config);
  }
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::LayerKernels, ptdp::LayerKernels, KernelsRefPlugin, "kernels-ref", "1.0.0",
            kSchema)
