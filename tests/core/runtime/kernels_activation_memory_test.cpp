// Which kernels plugins run parallel.sequence_parallel and parallel.recompute = "selective":
// those of ABI 1.8 or later that declare them (ptdp/activation_recompute.hpp); every other, as
// kernels-fused today, is refused in one line naming the key and the plugin.
#include <gtest/gtest.h>

#include <string>

#include "runtime/kernels_activation_memory.hpp"
#include "support/host_memory_kernels.hpp"

namespace ptdp {
namespace {

class Declaring : public test::HostMemoryKernels {
 public:
  explicit Declaring(uint32_t declared) : declared_(declared) {}
  uint32_t activation_memory_features() const override { return declared_; }

 private:
  uint32_t declared_;
};

RunConfig config(bool sequence_parallel, const std::string& recompute) {
  RunConfig c;
  c.parallel.tensor = 2;
  c.parallel.sequence_parallel = sequence_parallel;
  c.parallel.recompute = recompute;
  c.plugins.kernels = "kernels-probe";
  return c;
}

std::string refusal(const RunConfig& c, uint32_t abi_minor, const LayerKernels& kernels) {
  try {
    check_kernels_activation_memory(c, abi_minor, kernels);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const uint32_t kBoth = feature_bit(ActivationMemoryFeature::SequenceParallel) |
                       feature_bit(ActivationMemoryFeature::SelectiveRecompute);

TEST(KernelsActivationMemory, RunsWhatThePluginDeclares) {
  EXPECT_EQ(refusal(config(true, "selective"), 8, Declaring(kBoth)), "");
  EXPECT_EQ(refusal(config(false, "full"), 8, Declaring(0)), "");
  EXPECT_EQ(refusal(config(false, "none"), 6, Declaring(0)), "");
}

TEST(KernelsActivationMemory, RefusesWhatThePluginDoesNotDeclareNamingTheKeyAndThePlugin) {
  EXPECT_EQ(refusal(config(true, "none"), 8, Declaring(feature_bit(ActivationMemoryFeature::SelectiveRecompute))),
            "parallel.sequence_parallel = true but plugins.kernels 'kernels-probe' runs no sequence parallelism; set "
            "parallel.sequence_parallel = false");
  EXPECT_EQ(refusal(config(false, "selective"), 8, Declaring(feature_bit(ActivationMemoryFeature::SequenceParallel))),
            "parallel.recompute = \"selective\" but plugins.kernels 'kernels-probe' runs no selective recomputation; "
            "set parallel.recompute = \"full\" or \"none\"");
  // A plugin built before ABI 1.8 is never asked: it runs neither, whatever it would answer.
  EXPECT_NE(refusal(config(true, "none"), 7, Declaring(kBoth)), "");
}

TEST(KernelsActivationMemory, TheModulesReachTheKernelsOnlyUnderSelectiveRecomputation) {
  RunConfig c = config(false, "selective");
  c.parallel.recompute_modules = {"layernorm", "mlp_activation"};
  EXPECT_EQ(recompute_modules_of(c), module_bit(RecomputeModule::LayerNorm) | module_bit(RecomputeModule::MlpActivation));
  c.parallel.recompute = "full";
  EXPECT_EQ(recompute_modules_of(c), 0u);
}

}  // namespace
}  // namespace ptdp
