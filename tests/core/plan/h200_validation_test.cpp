// The planner on clusters/h200.toml against ptdp's own measurements on one H200 (BENCHMARKS.md;
// published_points.toml has them). The GPU's GEMM table and workspace come from measurements on
// the same machine, so these check that the model puts the parts together right, not that it
// predicts an unseen machine.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "plan_test_support.hpp"

namespace ptdp {
namespace {

using namespace ptdp::test;

const ClusterSpec& h200() { return shipped_cluster("h200"); }

TEST(H200Validation, OnePointThreeBillionStepTimeWithinTenPercent) {
  const toml::table& f = *published_points()["h200_1p3b"].as_table();
  const RunConfig::Model model = gpt(integer(f, "layers"), integer(f, "hidden"), integer(f, "heads"));
  const std::vector<int> micro_batches = integers(f, "micro_batches");
  const auto& measured = *f["step_time_s"].as_array();
  for (size_t i = 0; i < micro_batches.size(); ++i) {
    const int b = micro_batches[i];
    const PlanCandidate c = evaluate_layout({model, b, 1}, {1, 1, 1, b, 1, false, false, false}, h200(), simulation());
    const double paper = measured.get(i)->value<double>().value();
    std::cout << fmt::format("H200 1.3B b {}: predicted {:.4f} s ({:.1f} TFLOP/s), measured {:.4f} s ({:+.1f}%), {:.1f} GiB\n",
                             b, c.time.total(), c.tflops_per_gpu, paper, 100 * (c.time.total() / paper - 1),
                             c.memory.total() / (1 << 30));
    EXPECT_TRUE(c.fits);
    EXPECT_NEAR(c.time.total() / paper, 1.0, 0.10) << "b " << b;
  }
}

TEST(H200Validation, LargestModelOnOneGpuFitsAndTheNextDoesNot) {
  const toml::table& f = *published_points()["h200_largest"].as_table();
  const int hidden = integer(f, "hidden"), heads = integer(f, "heads");
  auto fits = [&](int layers, bool recompute) {
    const PlanCandidate c =
        evaluate_layout({gpt(layers, hidden, heads), 1, 1}, {1, 1, 1, 1, 1, recompute, false, false}, h200(), simulation());
    std::cout << fmt::format("H200 l {} h {} {}: {:.1f} GiB of {:.1f}\n", layers, hidden,
                             recompute ? "full recomputation" : "no recomputation", c.memory.total() / (1 << 30),
                             h200().memory_bytes / (1 << 30));
    return c.fits;
  };
  EXPECT_TRUE(fits(integer(f, "largest_without_recompute"), false));
  EXPECT_FALSE(fits(integer(f, "next_without_recompute"), false));
  EXPECT_TRUE(fits(integer(f, "largest_with_recompute"), true));
  EXPECT_FALSE(fits(integer(f, "next_with_recompute"), true));
}

}  // namespace
}  // namespace ptdp
