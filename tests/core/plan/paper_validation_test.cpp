// The planner on the paper's machine against the paper's own measurements (published_points.toml
// has them with their source). Each test prints what the planner predicts beside the paper.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "plan_test_support.hpp"

namespace ptdp {
namespace {

using namespace ptdp::test;

const ClusterSpec& selene() { return shipped_cluster("a100-selene"); }

TEST(PaperValidation, TableOneFitsAndItsThroughputIsWithinFifteenPercent) {
  for (const auto& node : *published_points()["table1"].as_array()) {
    const toml::table& row = *node.as_table();
    const RunConfig::Model model = gpt(integer(row, "layers"), integer(row, "hidden"), integer(row, "heads"));
    const int p = integer(row, "pipeline"), t = integer(row, "tensor"), gpus = integer(row, "gpus");
    const PlanRequest request{model, integer(row, "global_batch"), gpus};
    const auto best = fastest_fitting(request, micro_batch_and_chunk_choices(model, p, t, gpus / (p * t), true), selene());
    const double paper = number(row, "tflops_per_gpu");
    ASSERT_TRUE(best) << number(row, "parameters_b") << "B: no layout with (p, t) = (" << p << ", " << t << ") fits";
    std::cout << fmt::format("Table 1 {:>7.1f}B  {}  predicted {:6.1f} TFLOP/s, paper {:5.1f} ({:+.1f}%), {:.1f} GiB\n",
                             number(row, "parameters_b"), layout_label(best->layout), best->tflops_per_gpu, paper,
                             100 * (best->tflops_per_gpu / paper - 1), best->memory.total() / (1 << 30));
    EXPECT_NEAR(best->tflops_per_gpu / paper, 1.0, 0.15) << number(row, "parameters_b") << "B";
  }
}

}  // namespace
}  // namespace ptdp
