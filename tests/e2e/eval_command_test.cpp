// `ptdp-host eval CHECKPOINT --data FILE`: the loss and perplexity of a saved step, rebuilt from
// the manifest the step stores and loaded into one process whatever layout trained it.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

struct Evaluation {
  double loss = NAN, perplexity = NAN;
};

Evaluation parse(const CommandResult& r) {
  std::smatch m;
  static const std::regex line(R"(loss ([0-9.]+) \| perplexity ([0-9.]+))");
  Evaluation e;
  if (std::regex_search(r.output, m, line)) e = {std::stod(m[1]), std::stod(m[2])};
  return e;
}

class EvalCommand : public ::testing::Test {
 protected:
  EvalCommand() : dir(ws.dir() + "/ckpt") {
    trained = ws.run({"run.steps=6", "checkpoint.every=2", "parallel.pipeline=2", "parallel.tensor=2",
                      "checkpoint.dir=\"" + dir + "\""},
                     4);
  }
  CommandResult eval(const std::string& args) const {
    return run_host_command("eval " + dir + " --data " + ws.dir() + "/corpus.txt " + args);
  }
  TinyGptWorkspace ws;
  const std::string dir;
  HostRun trained;
};

TEST_F(EvalCommand, ALaterStepOfATrainingRunScoresBetter) {
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const CommandResult early = eval("--step 2"), late = eval("");
  ASSERT_EQ(early.exit_code, 0) << early.output;
  ASSERT_EQ(late.exit_code, 0) << late.output;
  EXPECT_NE(late.output.find("resumed from " + dir + " at step 6"), std::string::npos) << "the newest by default";
  const Evaluation a = parse(early), b = parse(late);
  ASSERT_FALSE(std::isnan(a.loss)) << early.output;
  ASSERT_FALSE(std::isnan(b.loss)) << late.output;
  EXPECT_LT(b.loss, a.loss) << "six steps of training should beat two";
  EXPECT_NEAR(b.perplexity, std::exp(b.loss), 1e-3 * b.perplexity);
  // Saved by 4 ranks (p = 2, t = 2), read back into one: the same model, so the same score again.
  EXPECT_DOUBLE_EQ(parse(eval("")).loss, b.loss);
}

TEST_F(EvalCommand, MoreThanOneProcessIsRefused) {
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const CommandResult r = eval("--set parallel.tensor=2 --set launch.nproc_per_node=2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("eval runs in one process"), std::string::npos) << r.output;
}

TEST_F(EvalCommand, AStepTheFolderLacksIsRefusedNamingItsSteps) {
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const CommandResult r = eval("--step 3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(dir + ": no step 3 (committed steps: 2, 4, 6)"), std::string::npos) << r.output;
}

TEST(EvalCommandErrors, AMissingFolderIsRefused) {
  TinyGptWorkspace ws;
  const CommandResult r = run_host_command("eval " + ws.dir() + "/nothing --data " + ws.dir() + "/corpus.txt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no such checkpoint folder"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ptdp::test
