#pragma once
// The groups of device checks, each registering its checks as GoogleTest tests of one suite
// (device_check_registry.hpp): Kernels, Fp8Cast, Attention, Plugin.
#include <string>

namespace ptdp::fused::test {

void register_kernel_checks();
void register_fp8_cast_checks();
void register_attention_checks();
// plugin_dir holds libptdp-kernels-fused.so and libptdp-kernels-ref.so.
void register_plugin_checks(const std::string& plugin_dir);

}  // namespace ptdp::fused::test
