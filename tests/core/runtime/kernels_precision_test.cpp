// Which kernels plugins run precision.params = "fp16": those of ABI 1.7 or later that declare
// PrecisionSupport::Fp16, whatever type they otherwise compute in; every other is refused in one
// line naming the key and the plugin.
#include <gtest/gtest.h>

#include <string>

#include "runtime/kernels_precision.hpp"
#include "support/host_memory_kernels.hpp"

namespace ptdp {
namespace {

// A host plugin that computes in `activations` and declares `declared`.
class Declaring : public test::HostMemoryKernels {
 public:
  Declaring(DType activations, uint32_t declared) : activations_(activations), declared_(declared) {}
  DType activation_dtype() const override { return activations_; }
  uint32_t precisions() const override { return declared_; }

 private:
  DType activations_;
  uint32_t declared_;
};

RunConfig config(const std::string& params) {
  RunConfig c;
  c.precision.params = params;
  c.plugins.kernels = "kernels-probe";
  return c;
}

std::string refusal(const RunConfig& c, uint32_t abi_minor, const LayerKernels& kernels) {
  try {
    check_kernels_precision(c, abi_minor, kernels);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const uint32_t kFp16 = precision_bit(PrecisionSupport::Fp16);

TEST(KernelsPrecision, Fp16RunsOnAPluginThatDeclaresItWhateverItComputesIn) {
  EXPECT_EQ(refusal(config("fp16"), 7, Declaring(DType::F32, kFp16)), "");
  EXPECT_EQ(refusal(config("fp16"), 7, Declaring(DType::BF16, kFp16 | precision_bit(PrecisionSupport::Fp8Hybrid))), "");
}

TEST(KernelsPrecision, Fp16IsRefusedNamingTheKeyAndThePlugin) {
  EXPECT_EQ(refusal(config("fp16"), 7, Declaring(DType::F32, precision_bit(PrecisionSupport::Fp8Hybrid))),
            "precision.params = \"fp16\" but plugins.kernels 'kernels-probe' runs no fp16 training; set "
            "precision.params = \"fp32\"");
  EXPECT_EQ(refusal(config("fp16"), 7, Declaring(DType::BF16, 0)),
            "precision.params = \"fp16\" but plugins.kernels 'kernels-probe' runs no fp16 training; set "
            "precision.params = \"bf16\"");
  // A plugin built before ABI 1.7 is never asked: it runs no fp16, whatever it would answer.
  EXPECT_NE(refusal(config("fp16"), 6, Declaring(DType::F32, kFp16)), "");
}

TEST(KernelsPrecision, OtherParamsStillMustBeWhatThePluginComputesIn) {
  EXPECT_EQ(refusal(config("fp32"), 7, Declaring(DType::F32, kFp16)), "");
  EXPECT_EQ(refusal(config("bf16"), 7, Declaring(DType::F32, kFp16)),
            "precision.params = \"bf16\" but plugins.kernels 'kernels-probe' computes in fp32; set precision.params = "
            "\"fp32\"");
}

TEST(KernelsPrecision, TheBindingNamesTheWorkingType) {
  EXPECT_EQ(working_type_of(config("fp32")), DType::F32);
  EXPECT_EQ(working_type_of(config("bf16")), DType::BF16);
  EXPECT_EQ(working_type_of(config("fp16")), DType::F16);
}

}  // namespace
}  // namespace ptdp
