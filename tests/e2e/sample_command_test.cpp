// `ptdp-host sample CHECKPOINT`: text from a saved step, rebuilt from the manifest it stores in
// one process whatever layout trained it.
#include <gtest/gtest.h>

#include <set>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

// A temperature that is not a number would sample the same token whatever the seed: refused by the
// command line, before any checkpoint is read.
TEST(SampleOptions, ATemperatureThatIsNotANumberIsRefused) {
  for (const std::string value : {"nan", "inf", "-1"}) {
    const CommandResult r = run_shell(std::string(PTDP_TEST_HOST) + " sample /nonexistent --temperature " + value);
    EXPECT_NE(r.exit_code, 0) << value;
    EXPECT_NE(r.output.find("--temperature"), std::string::npos) << value << ": " << r.output;
    EXPECT_EQ(r.output.find("/nonexistent"), std::string::npos) << value << ": the checkpoint was opened: " << r.output;
  }
}

class SampleCommand : public ::testing::Test {
 protected:
  SampleCommand() : dir(ws.dir() + "/ckpt") {
    // A learning rate that leaves the model near its random initialization: its greedy text
    // depends on the whole context, where a briefly trained model's repeats the commonest byte.
    trained = ws.run({"run.steps=4", "checkpoint.every=2", "parallel.pipeline=2", "parallel.tensor=2",
                      "optimizer.lr=1e-7", "optimizer.min_lr=1e-8", "checkpoint.dir=\"" + dir + "\""},
                     4);
  }
  // What the command printed on stdout: the generated text alone (its logs go to stderr).
  CommandResult sample(const std::string& args) const {
    return run_shell("{ " + std::string(PTDP_TEST_HOST) + " sample " + dir + " " + args + " 2>/dev/null; }");
  }
  CommandResult sample_with_logs(const std::string& args) const { return run_host_command("sample " + dir + " " + args); }
  TinyGptWorkspace ws;
  const std::string dir;
  HostRun trained;
};

TEST_F(SampleCommand, TheSameSeedGivesTheSameTextAndAnotherSeedOther) {
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const CommandResult a = sample("--prompt 'line 1' --tokens 40 --seed 7");
  ASSERT_EQ(a.exit_code, 0) << sample_with_logs("--prompt 'line 1' --tokens 40 --seed 7").output;
  EXPECT_EQ(a.output.size(), 41u) << "40 bytes and a newline: " << a.output;
  EXPECT_EQ(sample("--prompt 'line 1' --tokens 40 --seed 7").output, a.output);
  EXPECT_NE(sample("--prompt 'line 1' --tokens 40 --seed 8").output, a.output);
}

// Text is made one token at a time from the newest seq_len (16) tokens, each drawn by a number
// keyed by the seed and its position: continuing a prompt with part of its own output gives
// the rest of that output, past the window's length.
TEST_F(SampleCommand, TextContinuesItselfAcrossTheContextWindow) {
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const CommandResult whole = sample("--prompt-ids 108,105,110,101,32,49,50,58,32,116,104,101 --tokens 10 --seed 3 --ids");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  std::vector<std::string> ids;
  for (size_t at = 0; at < whole.output.size();) {
    const size_t end = whole.output.find_first_of(",\n", at);
    ids.push_back(whole.output.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_EQ(ids.size(), 10u) << whole.output;
  EXPECT_GT(std::set<std::string>(ids.begin(), ids.end()).size(), 2u) << "a text that depends on its context: " << whole.output;
  std::string prompt = "108,105,110,101,32,49,50,58,32,116,104,101";
  for (int i = 0; i < 6; ++i) prompt += "," + ids[i];  // 18 tokens: more than the window holds
  const CommandResult rest = sample("--prompt-ids " + prompt + " --tokens 4 --seed 3 --ids");
  EXPECT_EQ(rest.output, ids[6] + "," + ids[7] + "," + ids[8] + "," + ids[9] + "\n");
  // top-k 1 is greedy at any temperature.
  const std::string greedy = "--prompt-ids 108,105,110,101,32,49,50,58,32,116,104,101 --tokens 10 --ids";
  EXPECT_EQ(sample(greedy + " --top-k 1").output, sample(greedy + " --temperature 0").output);
}

TEST_F(SampleCommand, BadPromptsAreRefusedNamingTheReason) {
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  CommandResult r = sample_with_logs("--prompt-ids 3,256");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("prompt token 256 is outside the model's vocabulary [0, 256)"), std::string::npos) << r.output;
  r = sample_with_logs("--prompt-ids 3,x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("'x' is not a token id"), std::string::npos) << r.output;
  r = sample_with_logs("");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("an empty prompt"), std::string::npos) << r.output;
  r = sample_with_logs("--prompt a --set parallel.tensor=2 --set launch.nproc_per_node=2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("sample runs in one process"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ptdp::test
