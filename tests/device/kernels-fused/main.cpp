// kernels-fused device checks, one GoogleTest test each; on a machine without a CUDA device every
// one is skipped (ctest runs it there). Usage:
//   kernels-fused-device-checks [gtest flags] [plugin dir]
// The plugin dir (default: this build's) holds libptdp-kernels-fused.so and libptdp-kernels-ref.so;
// --gtest_filter='Kernels.*' (or Fp8Cast, Attention, Plugin) picks a group.
#include <gtest/gtest.h>

#include "device_checks.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string dir = argc > 1 ? argv[1] : PTDP_TEST_PLUGIN_DIR;
  ptdp::fused::test::register_kernel_checks();
  ptdp::fused::test::register_fp8_cast_checks();
  ptdp::fused::test::register_attention_checks();
  ptdp::fused::test::register_plugin_checks(dir);
  return RUN_ALL_TESTS();
}
