// What `run` would refuse only after its ranks started, or after training, is refused before any
// rank starts, and `validate` refuses the same manifests: precision the kernels do not compute in,
// missing data, a checkpoint folder that cannot be written, a shape the scheduler does not serve
// (sched-zb with virtual stages); and outputs of run itself (--trace,
// --metrics) that cannot be written.
#include <gtest/gtest.h>

#include <filesystem>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

struct Refusal {
  const char* name;
  std::vector<std::string> sets;
  const char* reason;  // in the one line both commands print
};

TEST(RefusedBeforeRanks, ValidateAndRunRefuseTheSameManifests) {
  TinyGptWorkspace ws;
  const Refusal refusals[] = {
      {"bf16 on kernels-ref", {"precision.params=\"bf16\""}, "precision.params = \"bf16\" but plugins.kernels 'kernels-ref' computes in fp32"},
      {"a data file that does not exist", {"data.path=\"/nonexistent/tokens.bin\""}, "data.path[0]: \"/nonexistent/tokens.bin\": no such file"},
      {"no data", {"data.path=[]"}, "data.path is not set"},
      {"an unwritable checkpoint folder", {"checkpoint.dir=\"/proc/ptdp-checkpoints\""}, "cannot create folder /proc/ptdp-checkpoints"},
      {"sched-zb with interleaving",
       {"launch.nproc_per_node=2", "parallel.pipeline=2", "parallel.virtual_stages=2", "plugins.scheduler=\"sched-zb\""},
       "sched-zb runs one model chunk per stage, got v = 2: set parallel.virtual_stages = 1"},
  };
  for (const Refusal& refusal : refusals) {
    std::string sets;
    for (const std::string& set : refusal.sets) sets += " --set '" + set + "'";
    const CommandResult validate = run_host_command("validate " + ws.manifest() + sets);
    EXPECT_EQ(validate.exit_code, 2) << refusal.name << "\n" << validate.output;
    EXPECT_NE(validate.output.find(refusal.reason), std::string::npos) << refusal.name << "\n" << validate.output;
    EXPECT_EQ(lines_of(validate.output), 1u) << refusal.name << "\n" << validate.output;

    const HostRun run = ws.run(refusal.sets, 2);
    EXPECT_NE(run.exit_code, 0) << refusal.name;
    EXPECT_NE(run.output.find(refusal.reason), std::string::npos) << refusal.name << "\n" << run.output;
    EXPECT_EQ(run.output.find("starting"), std::string::npos) << refusal.name << ": ranks were started\n" << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists("/proc/ptdp-checkpoints"));
}

TEST(RefusedBeforeRanks, ValidateLeavesNoCheckpointFolderBehind) {
  TinyGptWorkspace ws;
  const std::string folder = ws.dir() + "/new/checkpoints";
  const CommandResult validate = run_host_command("validate " + ws.manifest() + " --set 'checkpoint.dir=\"" + folder + "\"'");
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("checkpoint   " + folder + " can be written"), std::string::npos) << validate.output;
  EXPECT_FALSE(std::filesystem::exists(ws.dir() + "/new")) << "validate left the folder it tested";
}

TEST(RefusedBeforeRanks, OutputsOfTheRunThatCannotBeWrittenAreRefusedFirst) {
  TinyGptWorkspace ws;
  const HostRun trace = ws.run({}, 2, "--trace /proc/ptdp-trace.json");
  EXPECT_EQ(trace.exit_code, 1) << trace.output;
  EXPECT_NE(trace.output.find("--trace /proc/ptdp-trace.json: cannot write it: "), std::string::npos) << trace.output;
  EXPECT_EQ(trace.output.find("starting"), std::string::npos) << "ranks were started\n" << trace.output;
  EXPECT_TRUE(trace.losses.empty());

  const std::string folder = ws.dir() + "/metrics-folder";
  std::filesystem::create_directory(folder);
  const CommandResult metrics = run_host_command("run " + ws.manifest() + " --nproc 2 --metrics " + folder);
  EXPECT_EQ(metrics.exit_code, 1) << metrics.output;
  EXPECT_NE(metrics.output.find(folder + ": is a folder; give the file to write"), std::string::npos) << metrics.output;
  EXPECT_EQ(metrics.output.find("starting"), std::string::npos) << "ranks were started\n" << metrics.output;
  const CommandResult missing = run_host_command("run " + ws.manifest() + " --nproc 2 --metrics " + ws.dir() + "/no/m.jsonl");
  EXPECT_NE(missing.output.find("--metrics " + ws.dir() + "/no/m.jsonl: cannot write it: No such file or directory"),
            std::string::npos)
      << missing.output;
}

}  // namespace
}  // namespace ptdp::test
