// A run resumed from a checkpoint continues exactly where it stopped, even under another layout:
// the checkpoint holds every parameter and Adam moment by global name, and the data, the
// learning rate and dropout are functions of the step.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

TEST(CheckpointResume, ResumedRunUnderAnotherLayoutMatchesTheUninterruptedOne) {
  TinyGptWorkspace ws;
  // The decay horizon is fixed so that a 3-step run and a 6-step run share the schedule.
  const std::vector<std::string> common = {"run.steps=6", "optimizer.decay_steps=6", "checkpoint.every=3"};
  auto with = [&](std::vector<std::string> sets, const std::vector<std::string>& more) {
    sets.insert(sets.end(), more.begin(), more.end());
    return sets;
  };
  const HostRun whole = ws.run(with(common, {"checkpoint.dir=\"" + ws.dir() + "/ckpt-whole\""}), 1);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(whole.losses.size(), 6u) << whole.output;

  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt-split\"";
  const HostRun first = ws.run(with(common, {dir, "run.steps=3", "parallel.pipeline=2", "parallel.tensor=2"}), 4);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(first.losses.size(), 3u) << first.output;
  EXPECT_TRUE(std::filesystem::exists(ws.dir() + "/ckpt-split")) << first.output;

  const HostRun second = ws.run(with(common, {dir, "parallel.tensor=2", "parallel.data=2"}), 4);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  ASSERT_EQ(second.losses.size(), 3u) << "the resumed run should train steps 4 to 6 only:\n" << second.output;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(first.losses[i], whole.losses[i], 1e-5 * std::abs(whole.losses[i])) << "step " << i + 1;
    EXPECT_NEAR(second.losses[i], whole.losses[i + 3], 1e-5 * std::abs(whole.losses[i + 3])) << "step " << i + 4;
  }
}

TEST(CheckpointResume, CorruptCheckpointIsAClearErrorAndKeepsTheFiles) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  const HostRun first = ws.run({"run.steps=2", "checkpoint.every=2", "checkpoint.dir=\"" + dir + "\""}, 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::filesystem::path shard;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.path().extension() == ".safetensors") shard = entry.path();
  ASSERT_FALSE(shard.empty()) << "no shard written under " << dir;
  std::filesystem::resize_file(shard, std::filesystem::file_size(shard) / 2);
  const HostRun second = ws.run({"run.steps=4", "checkpoint.every=2", "checkpoint.dir=\"" + dir + "\""}, 1);
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.output.find(shard.filename().string()), std::string::npos) << second.output;
  EXPECT_TRUE(std::filesystem::exists(shard)) << "the damaged checkpoint was removed";
}

TEST(CheckpointResume, ALongerRunContinuesTheSavedDecayAndSaysSo) {
  TinyGptWorkspace ws;
  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt\"";
  // Cosine from 1e-3 to 1e-4 over 4 steps (decay_steps 0: run.steps), saved at step 4.
  const HostRun first = ws.run({"run.steps=4", "checkpoint.every=4", "optimizer.min_lr=1e-4", dir}, 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(first.lrs.size(), 4u);
  EXPECT_NEAR(first.lrs.back(), 1e-4, 1e-9);
  const HostRun longer = ws.run({"run.steps=8", "checkpoint.every=4", "optimizer.min_lr=1e-4", dir}, 1);
  ASSERT_EQ(longer.exit_code, 0) << longer.output;
  ASSERT_EQ(longer.lrs.size(), 4u) << longer.output;
  for (double lr : longer.lrs) EXPECT_NEAR(lr, 1e-4, 1e-9) << "the decay restarted:\n" << longer.output;
  EXPECT_NE(longer.output.find("the decay keeps the 4 steps it was saved with"), std::string::npos) << longer.output;
}

TEST(CheckpointResume, AChosenStepOfAnotherRunStartsANewLineInAnEmptyFolder) {
  TinyGptWorkspace ws;
  const std::string first_dir = ws.dir() + "/ckpt-first", branch_dir = ws.dir() + "/ckpt-branch";
  const HostRun first = ws.run({"run.steps=4", "checkpoint.every=2", "checkpoint.dir=\"" + first_dir + "\""}, 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(first.losses.size(), 4u);
  const HostRun branch = ws.run({"run.steps=4", "checkpoint.every=2", "checkpoint.dir=\"" + branch_dir + "\"",
                                 "checkpoint.resume_from=\"" + first_dir + "\"", "checkpoint.resume_step=2"},
                                1);
  ASSERT_EQ(branch.exit_code, 0) << branch.output;
  EXPECT_NE(branch.output.find("resumed from " + first_dir + " at step 2"), std::string::npos) << branch.output;
  ASSERT_EQ(branch.losses.size(), 2u) << "steps 3 and 4 only:\n" << branch.output;
  for (size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(branch.losses[i], first.losses[i + 2], 1e-5 * std::abs(first.losses[i + 2])) << "step " << i + 3;
  EXPECT_EQ(folder_names(first_dir), (std::vector<std::string>{"step-00000002", "step-00000004"}))
      << "the run it started from is untouched";
  EXPECT_EQ(folder_names(branch_dir), std::vector<std::string>{"step-00000004"});
}

// The same holds for real data: a blend of a glob of shards and another file, with a separate
// validation set. Sampling is a function of (seed, step, sample) over the files in order.
TEST(CheckpointResume, ABlendOfShardsWithAValidationSetResumesUnderAnotherLayoutExactly) {
  TinyGptWorkspace ws;
  std::ifstream in(ws.dir() + "/corpus.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  const std::vector<std::pair<std::string, std::pair<size_t, size_t>>> files = {
      {"shard_0.txt", {0, 100}}, {"shard_1.txt", {100, 200}}, {"shard_2.txt", {200, 300}},
      {"other.txt", {300, 360}}, {"val.txt", {360, 400}}};
  for (const auto& [name, range] : files) {
    std::ofstream out(ws.dir() + "/" + name);
    for (size_t i = range.first; i < range.second; ++i) out << lines.at(i);
  }
  const std::vector<std::string> common = {
      "run.steps=6", "optimizer.decay_steps=6", "checkpoint.every=3", "data.val_every=3",
      // Quoted for the shell, which would expand the glob itself.
      "'data.path=[\"" + ws.dir() + "/shard_*.txt\",\"" + ws.dir() + "/other.txt\"]'", "data.weights=[3,1]",
      "'data.val_path=\"" + ws.dir() + "/val.txt\"'"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const HostRun whole = ws.run(with({"checkpoint.dir=\"" + ws.dir() + "/ckpt-whole\""}), 1);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(whole.losses.size(), 6u) << whole.output;
  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt-split\"";
  const HostRun first = ws.run(with({dir, "run.steps=3", "parallel.pipeline=2", "parallel.tensor=2"}), 4);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const HostRun second = ws.run(with({dir, "parallel.tensor=2", "parallel.data=2"}), 4);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  ASSERT_EQ(first.losses.size() + second.losses.size(), 6u) << second.output;
  EXPECT_EQ(second.output.find("the data differ"), std::string::npos) << second.output;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(first.losses[i], whole.losses[i], 1e-5 * std::abs(whole.losses[i])) << "step " << i + 1;
    EXPECT_NEAR(second.losses[i], whole.losses[i + 3], 1e-5 * std::abs(whole.losses[i + 3])) << "step " << i + 4;
  }
}

TEST(CheckpointResume, AResumeOnOtherFilesSaysHowTheyDiffer) {
  TinyGptWorkspace ws;
  std::filesystem::copy_file(ws.dir() + "/corpus.txt", ws.dir() + "/part_0.txt");
  const std::vector<std::string> common = {"'data.path=\"" + ws.dir() + "/part_*.txt\"'", "checkpoint.every=2",
                                           "checkpoint.dir=\"" + ws.dir() + "/ckpt\""};
  std::vector<std::string> first_sets = common, second_sets = common;
  first_sets.push_back("run.steps=2");
  second_sets.push_back("run.steps=4");
  const HostRun first = ws.run(first_sets, 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::filesystem::copy_file(ws.dir() + "/corpus.txt", ws.dir() + "/part_1.txt");  // a shard more matches the glob
  const HostRun second = ws.run(second_sets, 1);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto bytes = std::filesystem::file_size(ws.dir() + "/corpus.txt");
  EXPECT_NE(second.output.find(fmt::format("resume: the data differ from those of step 2: it was trained on training "
                                           "1 file, {} tokens, validation 0 files, 0 tokens, the data are now training "
                                           "2 files, {} tokens",
                                           bytes, 2 * bytes)),
            std::string::npos)
      << second.output;
}

}  // namespace
}  // namespace ptdp::test
