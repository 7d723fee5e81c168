// ptdp-host plan, run as a user would: the JSON the issue specifies, the SVG, and one-line errors
// (exit 2) for a bad cluster file and a GPU count the cluster cannot give.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/host_command.hpp"
#include "support/temp_dir.hpp"

namespace ptdp {
namespace {

using test::quoted;

const std::string kSource = PTDP_SOURCE_DIR;
const std::string kManifest = kSource + "/examples/gpt-1gpu.toml";
const std::string kH200 = kSource + "/clusters/h200.toml";

test::HostResult plan(const std::string& args) { return test::run_host_command(PTDP_TEST_HOST, "plan " + args); }

TEST(HostPlanCommand, JsonHasGivenBestAndEveryCandidate) {
  const auto result = plan(quoted(kManifest) + " --cluster " + quoted(kH200) + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto doc = nlohmann::json::parse(result.output);
  for (const char* key : {"given", "best", "candidates"}) ASSERT_TRUE(doc.contains(key)) << key;
  ASSERT_FALSE(doc["candidates"].empty());
  for (const auto& c : doc["candidates"])
    for (const char* key : {"pipeline", "tensor", "data", "micro_batch", "virtual_stages", "recompute", "fits",
                            "memory_gib", "step_time_s", "tflops_per_gpu"})
      EXPECT_TRUE(c.contains(key)) << key;
  EXPECT_TRUE(doc["best"]["fits"].get<bool>());
  EXPECT_GT(doc["best"]["memory_gib"]["total"].get<double>(), doc["best"]["memory_gib"]["weights"].get<double>());
  EXPECT_EQ(doc["given"]["micro_batch"], 4);
  // The best is the fastest candidate that fits.
  for (const auto& c : doc["candidates"])
    if (c["fits"].get<bool>()) EXPECT_GE(c["step_time_s"].get<double>(), doc["best"]["step_time_s"].get<double>());
}

// sched-zb is planned beside the others: its candidates split the backward, one chunk per stage;
// a manifest that names it gives a given layout that splits the backward too.
TEST(HostPlanCommand, PlansZeroBubbleWithOneChunkPerStage) {
  const auto result = plan(quoted(kManifest) + " --cluster " + quoted(kH200) +
                           " --set parallel.global_batch=32 --set launch.nproc_per_node=8 --set parallel.data=8 --json");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto doc = nlohmann::json::parse(result.output);
  int zero_bubble = 0;
  for (const auto& c : doc["candidates"]) {
    if (c["pipeline"].get<int>() == 1) {
      EXPECT_TRUE(c["scheduler"].is_null()) << c.dump();
      EXPECT_FALSE(c["split_backward"].get<bool>()) << c.dump();
      continue;
    }
    if (!c["split_backward"].get<bool>()) {
      EXPECT_EQ(c["scheduler"], c["virtual_stages"].get<int>() == 1 ? "sched-1f1b" : "sched-interleaved") << c.dump();
      continue;
    }
    ++zero_bubble;
    EXPECT_EQ(c["scheduler"], "sched-zb") << c.dump();
    EXPECT_EQ(c["virtual_stages"], 1) << c.dump();
  }
  EXPECT_GT(zero_bubble, 0);
  EXPECT_FALSE(doc["given"]["split_backward"].get<bool>());
  const auto zb = plan(quoted(kManifest) + " --cluster " + quoted(kH200) +
                       " --set parallel.global_batch=32 --set launch.nproc_per_node=8 --set parallel.data=2"
                       " --set parallel.pipeline=4 --set plugins.scheduler=sched-zb --json");
  ASSERT_EQ(zb.exit_code, 0) << zb.output;
  const auto given = nlohmann::json::parse(zb.output)["given"];
  EXPECT_TRUE(given["split_backward"].get<bool>()) << given.dump();
  EXPECT_EQ(given["scheduler"], "sched-zb");
}

TEST(HostPlanCommand, SvgDrawsThroughputAgainstPipelineAndTensor) {
  test::TempDir dir("ptdp-plan");
  const std::string svg = (dir.path() / "plan.svg").string();
  const auto result = plan(quoted(kManifest) + " --cluster " + quoted(kH200) +
                           " --set parallel.global_batch=32 --set launch.nproc_per_node=8 --set parallel.data=8 --svg " +
                           quoted(svg));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream in(svg);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find("<rect class=\"cell best\""), std::string::npos);
  // 8 GPUs: p and t each 1, 2, 4 or 8 (the 1.3B's 24 layers and 16 heads divide by them all).
  int cells = 0;
  for (size_t at = text.find("<rect class=\"cell"); at != std::string::npos; at = text.find("<rect class=\"cell", at + 1))
    ++cells;
  EXPECT_EQ(cells, 10);
  // Shaded by step time, the ranking's measure: a faster cell is never lighter, and the best is
  // the darkest and fastest (shading by TFLOP/s, which counts the recomputed forward, made a
  // slower recomputing layout look better than the best).
  const std::regex cell(R"re(<rect class="cell( best)?"[^>]* fill="#([0-9a-f]{2})[0-9a-f]{4}"[^>]* data-step-s="([0-9.e+-]+)")re");
  std::vector<std::pair<double, int>> shaded;  // step time, red channel (lower is darker)
  double best_step = -1;
  for (std::sregex_iterator it(text.begin(), text.end(), cell), end; it != end; ++it) {
    const double step = std::stod((*it)[3]);
    if (step <= 0) continue;  // no fit
    shaded.emplace_back(step, std::stoi((*it)[2], nullptr, 16));
    if ((*it)[1].matched) best_step = step;
  }
  ASSERT_GE(shaded.size(), 2u) << text;
  std::sort(shaded.begin(), shaded.end());
  EXPECT_EQ(best_step, shaded.front().first);
  for (size_t i = 1; i < shaded.size(); ++i) EXPECT_GE(shaded[i].second, shaded[i - 1].second) << text;
  EXPECT_LT(shaded.front().second, shaded.back().second) << "every cell shaded alike";
}

TEST(HostPlanCommand, TheGivenLayoutsModelStateIsShownWithAndWithoutTheDistributedOptimizer) {
  const std::string args = quoted(kManifest) + " --cluster " + quoted(kH200) +
                           " --set parallel.global_batch=32 --set launch.nproc_per_node=8 --set parallel.data=8 --top 1";
  const std::regex line(R"(given, per GPU of stage 0: weights ([0-9.]+) \+ gradients ([0-9.]+) GiB, optimizer state )"
                        R"(([0-9.]+) GiB without the distributed optimizer, ([0-9.]+) GiB with it)");
  double given_gib[2] = {0, 0};
  for (const bool sharded : {false, true}) {
    const auto result = plan(args + (sharded ? " --set parallel.distributed_optimizer=true" : ""));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(result.output, m, line)) << result.output;
    EXPECT_LT(std::stod(m[4]), std::stod(m[3])) << result.output;
    // The given row's total follows the manifest's choice.
    std::smatch row;
    ASSERT_TRUE(std::regex_search(result.output, row, std::regex(R"(\ngiven +p 1 t 1 d 8 b 4 v 1[^\n]*? +(yes|no) +([0-9.]+))")))
        << result.output;
    given_gib[sharded] = std::stod(row[2]);
  }
  EXPECT_LT(given_gib[1], given_gib[0]);
}

TEST(HostPlanCommand, NoLayoutFitsIsExitOneWithTheSmallest) {
  const auto result = plan(quoted(kSource + "/examples/gpt-175b-paper.toml") + " --cluster " + quoted(kH200) +
                           " --set parallel.data=1 --set parallel.pipeline=1 --set parallel.global_batch=16"
                           " --set launch.nproc_per_node=8 --set launch.nnodes=1 --top 1");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("0 fit\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("why: no layout fits in the GPU's memory: the smallest, p 1 t 8 d 1 b 1 v 1, needs at "
                               "least "),
            std::string::npos)
      << result.output;
}

TEST(HostPlanCommand, BadClusterFileIsOneLineWithFileKeyAndReason) {
  test::TempDir dir("ptdp-plan");
  const std::string bad = (dir.path() / "bad.toml").string();
  std::ifstream in(kH200);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  text.replace(text.find("peak_tflops = 989.0"), 19, "peak_tflops = -1.0");
  std::ofstream(bad) << text;
  const auto result = plan(quoted(kManifest) + " --cluster " + quoted(bad));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find(bad + ":"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find(": gpu.peak_tflops: must be in (0, 1000000] (got -1)\n"), std::string::npos) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
}

TEST(HostPlanCommand, GpuCountTheClusterCannotGiveIsRefused) {
  const auto per_node = plan(quoted(kManifest) + " --cluster " + quoted(kH200) +
                             " --set launch.nproc_per_node=16 --set parallel.data=16 --set parallel.global_batch=64");
  EXPECT_EQ(per_node.exit_code, 2);
  EXPECT_EQ(per_node.output, "plan: " + kManifest + ": launch.nproc_per_node: 16 GPUs per node, but a node of " +
                                 kH200 + " has 8\n");
  const auto partial = plan(quoted(kManifest) + " --cluster " + quoted(kH200) +
                            " --set launch.nproc_per_node=6 --set launch.nnodes=2 --set parallel.data=12 "
                            "--set parallel.global_batch=48");
  EXPECT_EQ(partial.exit_code, 2);
  EXPECT_EQ(partial.output, "plan: " + kManifest + ": launch.nproc_per_node: 12 GPUs are not whole nodes of 8 GPUs (" +
                                kH200 + ")\n");
}

}  // namespace
}  // namespace ptdp
