// `ptdp-host ab` of sched-zb against sched-1f1b at p = 4 on the CPU: the arms train the same model
// (their losses equivalent), and each arm's schedule picture shows its ops, sched-zb's with the
// weight-gradient (W) boxes that fill its bubble and sched-1f1b's without any.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ZeroBubbleAb, TrainsTheSameModelAsOneF1BAndTheTimelineShowsTheWeightGradients) {
  TinyGptWorkspace ws;
  const std::string out = ws.dir() + "/ab-zb";
  const CommandResult run = run_shell(std::string(PTDP_TEST_HOST) + " ab " + ws.manifest() +
                                      " --set launch.nproc_per_node=4 --set parallel.pipeline=4 "
                                      "--arm 1f1b --set plugins.scheduler=sched-1f1b --arm zb --set plugins.scheduler=sched-zb "
                                      "--rounds 2 --steps 6 --warmup 2 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(out + "/report.json");
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report["comparisons"].size(), 1u);
  EXPECT_TRUE(report["comparisons"][0]["losses_equivalent"]) << report["comparisons"][0].dump(2);
  EXPECT_LT(report["comparisons"][0]["loss_max_rel_diff"].get<double>(), 1e-5);

  const std::string zb = text_of(out + "/schedule-zb.svg"), one_f_one_b = text_of(out + "/schedule-1f1b.svg");
  EXPECT_NE(zb.find("<title>W0: backward (weight) of microbatch 0"), std::string::npos) << zb.substr(0, 400);
  EXPECT_NE(zb.find("weight gradients (W)"), std::string::npos);
  EXPECT_EQ(one_f_one_b.find("backward (weight)"), std::string::npos);
  EXPECT_NE(text_of(out + "/report.md").find("[schedule-zb.svg](schedule-zb.svg)"), std::string::npos);
}

}  // namespace
}  // namespace ptdp::test
