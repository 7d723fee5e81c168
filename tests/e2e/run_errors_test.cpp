// `ptdp-host run` refuses a bad job with a clear message before any rank starts.
#include <gtest/gtest.h>

#include <filesystem>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

TEST(RunErrors, WrongWorldSize) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"parallel.tensor=2"}, 3);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("world"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("starting"), std::string::npos) << "ranks were started: " << r.output;
}

TEST(RunErrors, HeadsNotDivisibleByTensor) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"parallel.tensor=3"}, 3);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("heads"), std::string::npos) << r.output;
}

TEST(RunErrors, LayersNotDivisibleByVirtualStages) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"parallel.pipeline=2", "parallel.virtual_stages=3"}, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("layers"), std::string::npos) << r.output;
}

TEST(RunErrors, InterleavingNeedsMicrobatchesDivisibleByStages) {
  TinyGptWorkspace ws;
  // m = 8 / (2 * 1) = 4 microbatches; p = 8 does not divide 4... use p = 4 with m = 2.
  const HostRun r = ws.run({"parallel.pipeline=4", "parallel.virtual_stages=2", "parallel.micro_batch=4"}, 4);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("virtual_stages"), std::string::npos) << r.output;
}

TEST(RunErrors, ProfileOnTheHostIsRefusedOnceBeforeRanksStart) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"parallel.tensor=2"}, 2, "--profile");
  EXPECT_NE(r.exit_code, 0);
  const std::string reason = "--profile records a GPU's kernels and copies, but plugins.kernels 'kernels-ref' computes on the host";
  ASSERT_NE(r.output.find(reason), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(reason), r.output.rfind(reason)) << "reported more than once:\n" << r.output;
  EXPECT_EQ(r.output.find("starting"), std::string::npos) << "ranks were started:\n" << r.output;
}

TEST(RunErrors, MissingPlugin) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"plugins.communicator=\"no-such-comm\""}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no-such-comm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not found"), std::string::npos) << r.output;
}

TEST(RunErrors, APluginProblemIsReportedOnceWithValidatesExitCode) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"parallel.pipeline=2", "plugins.options.scheduler.depth=3"}, 2);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string reason = "plugins.options.scheduler: ";
  ASSERT_NE(r.output.find(reason), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(reason), r.output.rfind(reason)) << "reported more than once:\n" << r.output;
  EXPECT_EQ(r.output.find("starting"), std::string::npos) << "ranks were started:\n" << r.output;
}

TEST(RunErrors, ASchedulerThatCannotServeTheShapeIsRefusedBeforeRanksStart) {
  TinyGptWorkspace ws;
  // sched-1f1b serves no interleaving (v > 1).
  const HostRun r = ws.run({"parallel.pipeline=2", "parallel.virtual_stages=2"}, 2);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("plugins.scheduler: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("starting"), std::string::npos) << "ranks were started:\n" << r.output;
}

TEST(RunErrors, NprocZeroIsRefused) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({}, 0);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--nproc"), std::string::npos) << r.output;
  EXPECT_TRUE(r.losses.empty());
}

TEST(RunErrors, PrecisionTheKernelsDoNotCompute) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"precision.params=\"bf16\""}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("precision.params"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kernels-ref"), std::string::npos) << r.output;
}

TEST(RunErrors, MissingDataFile) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"data.path=\"/nonexistent/tokens.bin\""}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("/nonexistent/tokens.bin"), std::string::npos) << r.output;
}

bool plugin_built(const std::string& name) {
  return std::filesystem::exists(std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-" + name + ".so");
}

TEST(RunErrors, CommunicatorThatCannotMoveTheKernelsMemory) {
  if (!plugin_built("comm-nccl")) GTEST_SKIP() << "comm-nccl is not built (no CUDA)";
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"plugins.communicator=\"comm-nccl\""}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("plugins.communicator 'comm-nccl' cannot move host memory, which plugins.kernels "
                          "'kernels-ref' computes in"),
            std::string::npos)
      << r.output;
}

TEST(RunErrors, RanksSharingAGpuOverACommunicatorThatCannotShareOne) {
  if (!plugin_built("comm-nccl") || !plugin_built("kernels-fused")) GTEST_SKIP() << "the CUDA plugins are not built";
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"plugins.kernels=\"kernels-fused\"", "plugins.communicator=\"comm-nccl\"",
                            "precision.params=\"bf16\"", "parallel.tensor=2", "launch.ranks_per_gpu=2"},
                           2);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("launch.ranks_per_gpu = 2 puts several ranks on one GPU, but plugins.communicator "
                          "'comm-nccl' cannot share a GPU between ranks"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("starting"), std::string::npos) << "ranks were started: " << r.output;
}

TEST(RunErrors, GpuKernelsOnAMachineWithoutAGpu) {
  if (!plugin_built("kernels-fused")) GTEST_SKIP() << "kernels-fused is not built (no CUDA)";
  if (std::filesystem::exists("/dev/nvidia0")) GTEST_SKIP() << "this machine has a GPU";
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"plugins.kernels=\"kernels-fused\"", "precision.params=\"bf16\""}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("plugins.kernels 'kernels-fused' computes on GPUs, but this process sees none"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace ptdp::test
