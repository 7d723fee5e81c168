// The planner on the paper's machine against the paper's own measurements (published_points.toml
// has them with their source). Each test prints what the planner predicts beside the paper.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

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

// The fastest fitting layout of a fixed (p, t, d) over b, v and recomputation, for one batch.
std::optional<PlanCandidate> fastest_with(const RunConfig::Model& model, int gpus, int batch, int p, int t) {
  std::vector<PlanLayout> layouts = micro_batch_and_chunk_choices(model, p, t, gpus / (p * t), true);
  for (const PlanLayout& l : micro_batch_and_chunk_choices(model, p, t, gpus / (p * t), false)) layouts.push_back(l);
  return fastest_fitting({model, batch, gpus}, layouts, selene());
}

// What the model gets right of Figure 13: (8, 8) beats both layouts whose tensor groups leave a
// node and the deepest pipeline, and (2, 32) is the slowest. What it gets wrong (docs/planning.md):
// it puts (16, 4) about 1% ahead of (8, 8), and its best/worst ratio is about 1.5, not the
// paper's 1.95.
TEST(PaperValidation, FigureThirteenEightByEightBeatsCrossNodeTensorAndDeepPipelines) {
  const toml::table& f = *published_points()["figure13"].as_table();
  const RunConfig::Model model = gpt(integer(f, "layers"), integer(f, "hidden"), integer(f, "heads"));
  std::map<std::pair<int, int>, double> throughput;
  for (const auto& pair : *f["pipeline_tensor"].as_array()) {
    const int p = static_cast<int>(pair.as_array()->get(0)->value<int64_t>().value());
    const int t = static_cast<int>(pair.as_array()->get(1)->value<int64_t>().value());
    const auto best = fastest_with(model, integer(f, "gpus"), integer(f, "global_batch"), p, t);
    ASSERT_TRUE(best) << "(p, t) = (" << p << ", " << t << ") does not fit";
    std::cout << fmt::format("Figure 13 ({:>2}, {:>2})  {}  {:.1f} TFLOP/s\n", p, t, layout_label(best->layout),
                             best->tflops_per_gpu);
    throughput[{p, t}] = best->tflops_per_gpu;
  }
  const double eight_by_eight = throughput.at({8, 8});
  EXPECT_GT(eight_by_eight, throughput.at({2, 32}));
  EXPECT_GT(eight_by_eight, throughput.at({4, 16}));
  EXPECT_GT(eight_by_eight, throughput.at({32, 2}));
  const auto [slowest, fastest] = std::minmax_element(
      throughput.begin(), throughput.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  EXPECT_EQ(slowest->first, std::make_pair(2, 32));
  EXPECT_GT(eight_by_eight, 0.97 * fastest->second) << "(8, 8) is no longer within 3% of the fastest";
  std::cout << fmt::format("Figure 13 best/worst {:.2f}, paper {:.2f}\n", fastest->second / slowest->second,
                           number(f, "best_over_worst"));
}

// Sequences per second of a layout evaluated as given (the figure fixes every dimension).
double throughput_of(const RunConfig::Model& model, int gpus, int batch, const PlanLayout& layout) {
  const PlanRequest request{model, batch, gpus};
  const auto problem = layout_problem(request, layout);
  EXPECT_FALSE(problem) << *problem;
  const PlanCandidate c = evaluate_layout(request, layout, selene(), simulation());
  EXPECT_TRUE(c.fits) << layout_label(layout) << ": " << c.memory.total() / (1 << 30) << " GiB";
  return c.tflops_per_gpu;
}

TEST(PaperValidation, FiguresFourteenAndFifteenThroughputFallsAsPipelineOrTensorGrows) {
  const toml::table& f = *published_points()["figure14_15"].as_table();
  const RunConfig::Model model = gpt(integer(f, "layers"), integer(f, "hidden"), integer(f, "heads"));
  const int gpus = integer(f, "gpus");
  for (int batch : integers(f, "global_batches")) {
    std::string line = fmt::format("Figure 14 B {:>3}:", batch);
    double previous = 1e30;
    for (int p : integers(f, "pipeline")) {
      const double tflops = throughput_of(model, gpus, batch, {p, 1, gpus / p, 1, 1, true, false, false});
      line += fmt::format(" p {} {:.1f}", p, tflops);
      EXPECT_LT(tflops, previous) << "B " << batch << " p " << p;
      previous = tflops;
    }
    std::cout << line << "\n";
    line = fmt::format("Figure 15 B {:>3}:", batch);
    previous = 1e30;
    for (int t : integers(f, "tensor")) {
      const double tflops = throughput_of(model, gpus, batch, {1, t, gpus / t, 1, 1, true, false, false});
      line += fmt::format(" t {} {:.1f}", t, tflops);
      EXPECT_LT(tflops, previous) << "B " << batch << " t " << t;
      previous = tflops;
    }
    std::cout << line << "\n";
  }
}

// What the model gets right of Figure 16: past the best micro-batch, throughput falls as b grows
// (the bubble (p-1)/m grows with b). What it gets wrong (docs/planning.md): it predicts b = 1 best,
// not 2, since its GEMM table is already at its plateau at b = 1 for this model.
TEST(PaperValidation, FigureSixteenThroughputFallsPastMicroBatchTwo) {
  const toml::table& f = *published_points()["figure16"].as_table();
  const RunConfig::Model model = gpt(integer(f, "layers"), integer(f, "hidden"), integer(f, "heads"));
  const int gpus = integer(f, "gpus"), p = integer(f, "pipeline"), t = integer(f, "tensor");
  std::map<int, double> throughput;
  std::string line = "Figure 16:";
  for (int b : integers(f, "micro_batches")) {
    throughput[b] = throughput_of(model, gpus, integer(f, "global_batch"), {p, t, gpus / (p * t), b, 1, true, false, true});
    line += fmt::format(" b {} {:.1f}", b, throughput[b]);
  }
  std::cout << line << fmt::format(" (paper: best b {})\n", integer(f, "best_micro_batch"));
  const int paper_best = integer(f, "best_micro_batch");
  for (int b : integers(f, "micro_batches")) {
    if (b > paper_best) {
      EXPECT_LT(throughput.at(b), throughput.at(b / 2)) << "b " << b;
    }
  }
}

TEST(PaperValidation, FigureSeventeenRecomputationMakesASmallBatchStepAThirdLonger) {
  const toml::table& f = *published_points()["figure17"].as_table();
  const RunConfig::Model model = gpt(integer(f, "layers"), integer(f, "hidden"), integer(f, "heads"));
  const int gpus = integer(f, "gpus"), p = integer(f, "pipeline"), t = integer(f, "tensor");
  const double paper = number(f, "sequences_per_s_without") / number(f, "sequences_per_s_with");
  for (int batch : integers(f, "small_batches")) {
    const PlanRequest request{model, batch, gpus};
    const PlanLayout with{p, t, 1, 1, 1, true, false, true}, without{p, t, 1, 1, 1, false, false, true};
    const double seconds_with = evaluate_layout(request, with, selene(), simulation()).time.total();
    const double seconds_without = evaluate_layout(request, without, selene(), simulation()).time.total();
    std::cout << fmt::format("Figure 17 B {:>2}: a step with recomputation takes {:.3f}x as long (paper at B 32: {:.2f})\n",
                             batch, seconds_with / seconds_without, paper);
    EXPECT_NEAR(seconds_with / seconds_without, paper, 0.07) << "B " << batch;
  }
}

TEST(PaperValidation, FigureTwelveInterleavingGainsMostAtSmallBatch) {
  const toml::table& f = *published_points()["figure12"].as_table();
  const RunConfig::Model model = gpt(integer(f, "layers"), integer(f, "hidden"), integer(f, "heads"));
  const int gpus = integer(f, "gpus"), p = integer(f, "pipeline"), t = integer(f, "tensor");
  double previous_gain = 1e30;
  std::string line = "Figure 12 interleaving gain:";
  for (int batch : integers(f, "global_batches")) {
    const double interleaved = throughput_of(model, gpus, batch, {p, t, 1, 1, 2, true, false, true});
    const double plain = throughput_of(model, gpus, batch, {p, t, 1, 1, 1, true, false, true});
    const double gain = interleaved / plain - 1;
    line += fmt::format(" B {} {:.1f}/{:.1f} {:+.1f}%", batch, interleaved, plain, 100 * gain);
    EXPECT_GT(gain, 0) << "B " << batch;
    EXPECT_LT(gain, previous_gain) << "B " << batch;
    previous_gain = gain;
  }
  std::cout << line << "\n";
}

}  // namespace
}  // namespace ptdp
