// A step is resumed only by the model that saved it: a model key that changes what the weights
// compute (heads, layernorm_eps, vocab, ...) is refused before any rank starts, by run and by
// validate, naming the key, both values and the step; dropout and the layout may change.
#include <gtest/gtest.h>

#include <filesystem>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

TEST(ResumedModel, AnotherModelIsRefusedBeforeRanksStartNamingKeyValuesAndStep) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", at = "checkpoint.dir=\"" + dir + "\"";
  const HostRun first = ws.run({"run.steps=2", "checkpoint.every=2", at}, 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto files_before = std::distance(std::filesystem::recursive_directory_iterator(dir), {});

  struct Change {
    std::string set, saved, now;
  };
  for (const Change& change : {Change{"model.heads=2", "model.heads = 4", "model.heads = 2"},
                               Change{"model.layernorm_eps=1e-3", "model.layernorm_eps = 1e-05", "model.layernorm_eps = 0.001"}}) {
    const std::string expected = "checkpoint.dir " + dir + " step 2 was saved by a model with " + change.saved +
                                 ", and this run has " + change.now;
    const HostRun resumed = ws.run({"run.steps=4", "checkpoint.every=2", at, change.set}, 2);
    EXPECT_NE(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find(expected), std::string::npos) << resumed.output;
    EXPECT_EQ(resumed.output.find("starting"), std::string::npos) << "ranks were started\n" << resumed.output;
    EXPECT_TRUE(resumed.losses.empty());

    const CommandResult validate =
        run_host_command("validate " + ws.manifest() + " --set 'run.steps=4' --set '" + at + "' --set " + change.set);
    EXPECT_EQ(validate.exit_code, 2) << validate.output;
    EXPECT_NE(validate.output.find(expected), std::string::npos) << validate.output;
    EXPECT_EQ(lines_of(validate.output), 1u) << validate.output;
  }
  EXPECT_EQ(std::distance(std::filesystem::recursive_directory_iterator(dir), {}), files_before)
      << "a refused resume changed the folder";

  // Dropout is a training setting and the layout may change: the run goes on from step 2.
  const HostRun goes_on = ws.run({"run.steps=4", "checkpoint.every=2", at, "model.dropout=0.0", "parallel.tensor=2"}, 2);
  ASSERT_EQ(goes_on.exit_code, 0) << goes_on.output;
  EXPECT_NE(goes_on.output.find("resumed from"), std::string::npos) << goes_on.output;
  EXPECT_EQ(goes_on.losses.size(), 2u);
}

TEST(ResumedModel, AStepOfAnotherFolderIsHeldToTheModelToo) {
  TinyGptWorkspace ws;
  const std::string from = ws.dir() + "/ckpt";
  ASSERT_EQ(ws.run({"run.steps=2", "checkpoint.every=2", "checkpoint.dir=\"" + from + "\""}, 1).exit_code, 0);
  const HostRun resumed =
      ws.run({"run.steps=4", "checkpoint.resume_from=\"" + from + "\"", "model.vocab=300"}, 1);
  EXPECT_NE(resumed.exit_code, 0);
  EXPECT_NE(resumed.output.find("checkpoint.resume_from " + from +
                                " step 2 was saved by a model with model.vocab = 256, and this run has model.vocab = 300"),
            std::string::npos)
      << resumed.output;
}

}  // namespace
}  // namespace ptdp::test
