// A run never mixes with or destroys another run's committed steps, finds a folder it cannot
// use before it trains, cleans what failed saves left, keeps only checkpoint.keep steps, saves
// at the end whatever checkpoint.every is, and never saves a diverged model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_space.hpp"
#include "host_run.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string dir_setting(const std::string& dir) { return "checkpoint.dir=\"" + dir + "\""; }

TEST(CheckpointSafety, ResumeFalseIntoAnotherRunsFolderIsRefusedAndDeletesNothing) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  const HostRun first = ws.run({"run.steps=4", "checkpoint.every=2", dir_setting(dir)}, 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(folder_names(dir), (std::vector<std::string>{"step-00000002", "step-00000004"}));
  const std::string index2 = read_text(dir + "/step-00000002/index.json");
  const std::string index4 = read_text(dir + "/step-00000004/index.json");

  const HostRun second = ws.run(
      {"run.steps=2", "checkpoint.every=2", "checkpoint.resume=false", "parallel.data=2", dir_setting(dir)}, 2);
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.output.find(dir + " holds committed steps 2, 4 of another run and checkpoint.resume = false"),
            std::string::npos)
      << second.output;
  EXPECT_EQ(second.output.find("starting"), std::string::npos) << "ranks were started:\n" << second.output;
  EXPECT_TRUE(second.losses.empty()) << "the refused run trained";
  EXPECT_EQ(folder_names(dir), (std::vector<std::string>{"step-00000002", "step-00000004"}));
  EXPECT_EQ(read_text(dir + "/step-00000002/index.json"), index2);
  EXPECT_EQ(read_text(dir + "/step-00000004/index.json"), index4);
}

TEST(CheckpointSafety, AnUnwritableFolderIsRefusedBeforeTraining) {
  TinyGptWorkspace ws;
  // /proc refuses new files even to root.
  const HostRun r = ws.run({"checkpoint.every=2", "parallel.data=2", dir_setting("/proc")}, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("cannot write in checkpoint folder /proc"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("starting"), std::string::npos) << "ranks were started:\n" << r.output;
  EXPECT_TRUE(r.losses.empty());
}

TEST(CheckpointSafety, AFailedSavesStagingIsClearedAtStartAndTheSpaceASaveNeedsIsSaid) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  fs::create_directories(dir + "/.staging-step-00000003");
  std::ofstream(dir + "/.staging-step-00000003/rank-00000.safetensors.spool") << std::string(4096, 'x');
  const HostRun r = ws.run({"run.steps=2", "checkpoint.every=2", dir_setting(dir)}, 1);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/.staging-step-00000003"));
  EXPECT_NE(r.output.find(".staging-step-00000003 (4096 bytes), left by a save that did not finish"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("a save needs"), std::string::npos) << r.output;
  EXPECT_EQ(folder_names(dir), std::vector<std::string>{"step-00000002"});
}

TEST(CheckpointSafety, KeepDeletesAllButTheNewestStepsAndTheLastStepIsSaved) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  // 7 steps, every 2: steps 2, 4, 6 and, at the end, 7; keep the newest two.
  const HostRun r = ws.run({"run.steps=7", "checkpoint.every=2", "checkpoint.keep=2", dir_setting(dir)}, 1);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(folder_names(dir), (std::vector<std::string>{"step-00000006", "step-00000007"}));
  EXPECT_NE(r.output.find("checkpoint.keep = 2: deleted step 4"), std::string::npos) << r.output;
}

// A one-step run that saves its step, and that step's index.json.
class OneSavedStep : public ::testing::Test {
 protected:
  OneSavedStep()
      : dir(ws.dir() + "/ckpt"), run(ws.run({"run.steps=1", "checkpoint.every=1", dir_setting(dir)}, 1)) {
    if (run.exit_code == 0) index = nlohmann::json::parse(read_text(dir + "/step-00000001/index.json"));
  }
  TinyGptWorkspace ws;
  const std::string dir;
  const HostRun run;
  nlohmann::json index;
};

TEST_F(OneSavedStep, TheSizeOfAStepIsWhatTheStartSaid) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // What the step holds, by its own index: every tensor's elements, 4 bytes each.
  uint64_t data_bytes = 0;
  for (const auto& [name, tensor] : index["tensors"].items()) {
    uint64_t elements = 1;
    for (const auto& d : tensor["global_shape"]) elements *= d.get<uint64_t>();
    data_bytes += 4 * elements;
  }
  EXPECT_NE(run.output.find("checkpoints go to " + dir + ": " + byte_size(data_bytes) + " a step, a save needs " +
                            byte_size(2 * data_bytes) + " free while it is written"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(checkpoint_step_bytes(load_manifest(ws.manifest()).model), data_bytes);
}

TEST_F(OneSavedStep, AStepHoldsTheResolvedManifestNotAPath) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json& config = index["metadata"]["config"];
  EXPECT_EQ(config["model"], nlohmann::json(run_config_json(load_manifest(ws.manifest()))["model"]))
      << "ffn_hidden, layernorm_eps, padded vocab and the rest, as the run resolved them";
  EXPECT_EQ(config["run"]["steps"], 1) << "with the --set overrides applied";
  EXPECT_EQ(config["checkpoint"]["dir"], dir);
}

TEST(CheckpointSafety, ADivergedStepIsNeverSavedAndErrorsCountStepsFromOne) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  // lr = 1e30 takes step 1's weights to about 1e30: finite, yet every later forward overflows.
  const HostRun r = ws.run({"run.steps=4", "checkpoint.every=1", "optimizer.lr=1e30", "optimizer.warmup_steps=0",
                            "optimizer.min_lr=0", dir_setting(dir)},
                           1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("step 2: gradient norm is"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 1, whose weights gave these gradients, is not saved"), std::string::npos) << r.output;
  EXPECT_TRUE(folder_names(dir).empty()) << "a diverged step was committed";
  EXPECT_EQ(r.losses.size(), 1u) << "step 1 trains and logs before the model diverges";
}

// The last step has no next one to show its weights sound: it runs a batch forward first, and
// weights that give no finite loss are not saved; eval and sample of such weights fail, not print.
TEST(CheckpointSafety, ALastStepWhoseWeightsGiveNoFiniteLossIsNotSaved) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  const HostRun r = ws.run({"run.steps=1", "checkpoint.every=1", "optimizer.lr=1e30", "optimizer.warmup_steps=0",
                            "optimizer.decay=\"constant\"", "optimizer.grad_clip=0", dir_setting(dir)},
                           1);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step 1: its weights give a loss of"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("this step is not saved"), std::string::npos) << r.output;
  EXPECT_TRUE(folder_names(dir).empty()) << "a step whose weights give no finite loss was committed";
}

TEST(CheckpointSafety, AnInfiniteLearningRateIsRefused) {
  TinyGptWorkspace ws;
  const HostRun r = ws.run({"optimizer.lr=inf"}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("optimizer.lr: must be a finite number (got inf)"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ptdp::test
