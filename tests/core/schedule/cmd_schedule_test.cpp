// ptdp-host schedule as a user runs it, with the stock scheduler plugins of this build.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

struct HostRun {
  int status;
  std::string output;  // stdout and stderr
};

HostRun host(const std::string& arguments) {
  const std::string command = std::string("PTDP_PLUGIN_PATH= '") + PTDP_TEST_HOST + "' schedule --path '" +
                              PTDP_TEST_PLUGIN_DIR + "' " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CmdSchedule, InterleavedPaperExampleIsVerifiedWithBubble0_1875) {
  const auto svg = std::filesystem::temp_directory_path() / "ptdp_cmd_schedule_test.svg";
  const auto trace = std::filesystem::temp_directory_path() / "ptdp_cmd_schedule_test.json";
  const HostRun r = host("--scheduler sched-interleaved --stages 4 --chunks 2 --microbatches 8 --svg '" + svg.string() +
                     "' --trace '" + trace.string() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("  stage 0: F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("verified: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bubble fraction: 0.1875 simulated, 0.1875 by the paper's formula (p-1)/(v*m)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("peak activations per stage (microbatch-chunks alive at once): 11 9 7 5"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_file(svg).rfind("<svg", 0), 0u);
  // A span per op, a name and an order per stage, a name for the pipeline.
  EXPECT_EQ(nlohmann::json::parse(read_file(trace))["traceEvents"].size(), 4u * 2 + 1 + 4u * 32);
  std::filesystem::remove(svg);
  std::filesystem::remove(trace);
}

TEST(CmdSchedule, OneFOneBWithOneChunk) {
  const HostRun r = host("--scheduler sched-1f1b --chunks 1 --stages 4 --microbatches 8");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("  stage 3: F0 B0 F1 B1 F2 B2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bubble fraction: 0.375 simulated, 0.375 by the paper's formula (p-1)/m"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("alive at once): 4 3 2 1"), std::string::npos) << r.output;
}

TEST(CmdSchedule, JsonHasTheVerdictBubbleAndOps) {
  const HostRun r = host("--scheduler sched-interleaved -p 4 -v 2 -m 8 --t-forward 2 --t-backward 4 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["valid"], true);
  EXPECT_DOUBLE_EQ(doc["bubble_fraction"].get<double>(), 0.1875);
  EXPECT_DOUBLE_EQ(doc["formula_bubble_fraction"].get<double>(), 0.1875);
  EXPECT_DOUBLE_EQ(doc["ideal"].get<double>(), 48.0);
  EXPECT_EQ(doc["peak_activations"], nlohmann::json({11, 9, 7, 5}));
  ASSERT_EQ(doc["stages"].size(), 4u);
  EXPECT_EQ(doc["stages"][3].size(), 32u);
  EXPECT_EQ(doc["stages"][0][11]["op"], "B0.1");
  EXPECT_EQ(doc["stages"][0][11]["kind"], "backward");
  EXPECT_EQ(doc["stages"][0][11]["chunk"], 1);
  EXPECT_LT(doc["stages"][0][0]["start"].get<double>(), doc["stages"][0][0]["end"].get<double>());
}

TEST(CmdSchedule, TransferLatencyWidensTheBubble) {
  const HostRun r = host("--scheduler sched-1f1b -p 2 -m 1 --transfer-latency 0.5 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.output)["bubble_fraction"].get<double>(), 4.0 / 3.0);
}

TEST(CmdSchedule, SchedulerGivenAsAPath) {
  const HostRun r = host(std::string("--scheduler '") + PTDP_TEST_PLUGIN_DIR + "/libptdp-sched-1f1b.so' -p 3 -m 6 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.output)["bubble_fraction"].get<double>(), 2.0 / 6.0);
}

TEST(CmdSchedule, RefusalSaysWhatToChange) {
  HostRun r = host("--scheduler sched-interleaved -p 4 -v 2 -m 6");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("REFUSED by the scheduler: sched-interleaved needs m to be a multiple of p (m % p == 0), "
                          "got m = 6, p = 4: use m = 4 or m = 8"),
            std::string::npos)
      << r.output;
  r = host("--scheduler sched-interleaved -p 4 -v 1 -m 8 --json");
  EXPECT_EQ(r.status, 1);
  const auto doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["valid"], false);
  EXPECT_EQ(doc["refused"], true);
  EXPECT_EQ(doc["bubble_fraction"], nullptr);
  EXPECT_NE(doc["error"].get<std::string>().find("use sched-1f1b for v = 1"), std::string::npos);
  r = host("--scheduler sched-1f1b -p 4 -v 2 -m 8");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("sched-1f1b runs one model chunk per stage, got v = 2"), std::string::npos) << r.output;
}

TEST(CmdSchedule, BadInputIsNamed) {
  HostRun r = host("--scheduler sched-nonexistent -p 2 -m 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("sched-nonexistent"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not found"), std::string::npos) << r.output;
  r = host("--scheduler sched-1f1b -p 2 -m 2 --svg /nonexistent-dir/t.svg");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("svg /nonexistent-dir/t.svg: cannot write the file"), std::string::npos) << r.output;
  r = host("--scheduler sched-1f1b -p 0 -m 2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--stages"), std::string::npos) << r.output;
  r = host("--scheduler sched-1f1b -p 2 -m 2 --t-forward -1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--t-forward"), std::string::npos) << r.output;
}

}  // namespace
