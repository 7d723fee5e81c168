// Sequence parallelism and selective recomputation on the CPU (kernels-ref over comm-ucx): every
// layout gives the one-rank losses, a t 2 trace shows reduce-scatters and all-gathers where the
// tensor-parallel all-reduces were, and what cannot run is refused in one line, by `validate` as
// by `run`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "host_run.hpp"
#include "layout.hpp"
#include "trace_spans.hpp"

namespace ptdp::test {
namespace {

const std::string kSequenceParallel = "parallel.sequence_parallel=true";
// Quoted for the shell the runs go through.
const std::string kEveryModule = R"(parallel.recompute_modules='["core_attention","mlp_activation","layernorm"]')";

TinyGptWorkspace& workspace() {
  static TinyGptWorkspace ws;
  return ws;
}

const HostRun& one_rank() {
  static const HostRun run = workspace().run({}, 1);
  return run;
}

struct SequenceParallelCase {
  Layout layout;
  std::vector<std::string> extra;  // besides the layout: sequence parallelism, recomputation, ...
  std::string label;
  std::string name() const { return layout.name() + (label.empty() ? "" : "_" + label); }
};

void PrintTo(const SequenceParallelCase& c, std::ostream* os) { *os << c.name(); }

class SequenceParallelLayouts : public ::testing::TestWithParam<SequenceParallelCase> {};

TEST_P(SequenceParallelLayouts, LossesEqualOneRank) {
  const SequenceParallelCase& c = GetParam();
  const HostRun& want = one_rank();
  ASSERT_EQ(want.exit_code, 0) << want.output;
  const HostRun got = workspace().run(with(c.layout.sets(), c.extra), c.layout.ranks());
  ASSERT_EQ(got.exit_code, 0) << got.output;
  ASSERT_EQ(got.losses.size(), want.losses.size()) << got.output;
  for (size_t i = 0; i < want.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * std::abs(want.losses[i])) << "step " << i + 1 << " of " << c.name();
}

// A handful of layouts that together take t 2 and 4 through p, d, v, scatter/gather, the
// distributed optimizer and both kinds of recomputation (the full cross product would cost CI
// minutes without reaching code these do not).
INSTANTIATE_TEST_SUITE_P(
    Layouts, SequenceParallelLayouts,
    ::testing::Values(
        SequenceParallelCase{{1, 2, 1, 1, false, false}, {kSequenceParallel}, "sp"},
        SequenceParallelCase{{1, 4, 1, 1, false, false},
                             {kSequenceParallel, "parallel.recompute=\"selective\"", kEveryModule}, "sp_selective"},
        SequenceParallelCase{{1, 2, 2, 1, false, false}, {kSequenceParallel, "parallel.distributed_optimizer=true"},
                             "sp_distopt"},
        SequenceParallelCase{{2, 2, 1, 2, true, true}, {kSequenceParallel}, "sp"},
        SequenceParallelCase{{2, 2, 1, 1, true, false}, {kSequenceParallel, "parallel.recompute=\"selective\""},
                             "sp_selective_attention"},
        SequenceParallelCase{{1, 4, 2, 1, false, false},
                             {kSequenceParallel, "parallel.distributed_optimizer=true", "parallel.recompute=\"selective\"",
                              R"(parallel.recompute_modules='["layernorm","mlp_activation"]')"},
                             "sp_distopt_selective"},
        SequenceParallelCase{{1, 1, 1, 1, false, false}, {"parallel.recompute=\"selective\"", kEveryModule}, "selective"}),
    [](const auto& info) { return info.param.name(); });

// How many spans of each name rank 0 recorded.
std::map<std::string, int> span_counts(const std::string& trace) {
  std::map<std::string, int> counts;
  const auto ranks = spans_by_rank(trace);
  for (const Span& s : ranks.at(0)) ++counts[s.name];
  return counts;
}

// The kernels' tensor-parallel collectives in one traced step at t 2: with sequence parallelism
// every all-reduce of the blocks, the embedding and the head's backward becomes a reduce-scatter
// (and all-gathers come before the column-parallel GEMMs and in the backward); only the vocab-
// parallel cross entropy's two all-reduces stay.
TEST(SequenceParallelTrace, ReduceScattersAndAllGathersTakeTheAllReducesPlaces) {
  TinyGptWorkspace ws;
  const std::string trace = ws.dir() + "/trace.json";
  const std::vector<std::string> t2 = {"parallel.tensor=2", "run.steps=2"};
  const HostRun plain = ws.run(t2, 2, "--trace " + trace + " --trace-steps 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  std::map<std::string, int> before = span_counts(trace);
  const HostRun sharded = ws.run(with(t2, {kSequenceParallel}), 2, "--trace " + trace + " --trace-steps 1");
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  std::map<std::string, int> after = span_counts(trace);

  const int microbatches = 4, layers = 8;  // the workspace's B 8, b 2 and 8 blocks
  EXPECT_EQ(before["tp all-reduce"], microbatches * (1 + 4 * layers + 2 + 1));
  EXPECT_EQ(before["tp reduce-scatter"], 0);
  EXPECT_EQ(before["tp all-gather"], 0);
  EXPECT_EQ(after["tp all-reduce"], microbatches * 2) << "the cross entropy's max and sums";
  EXPECT_EQ(after["tp reduce-scatter"] + after["tp all-reduce"], before["tp all-reduce"]);
  // Forward: one before each column-parallel GEMM (two a block, the head's logits); backward: the
  // conjugate of each reduce-scatter, and the LayerNorm outputs again for the weight gradients.
  EXPECT_EQ(after["tp all-gather"], microbatches * (1 + 6 * layers + 1));
  EXPECT_EQ(after["tp all-reduce of replicated gradients"], layers + 2) << "every layer's once per step";
}

TEST(SequenceParallel, RefusedWhereItCannotRun) {
  TinyGptWorkspace ws;
  const auto validate = [&](const std::string& sets) {
    return run_shell(std::string(PTDP_TEST_HOST) + " validate " + ws.manifest() + sets);
  };
  const CommandResult one_rank = validate(" --set parallel.sequence_parallel=true");
  EXPECT_EQ(one_rank.exit_code, 2) << one_rank.output;
  EXPECT_NE(one_rank.output.find("parallel.sequence_parallel: needs parallel.tensor > 1 (got 1)"), std::string::npos)
      << one_rank.output;
  const HostRun run = ws.run({kSequenceParallel}, 1);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("needs parallel.tensor > 1"), std::string::npos) << run.output;
  const CommandResult unknown =
      validate(" --set parallel.recompute=selective --set 'parallel.recompute_modules=[\"attention\"]'");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("parallel.recompute_modules: unknown module \"attention\" (modules: core_attention, "
                                "layernorm, mlp_activation)"),
            std::string::npos)
      << unknown.output;
  const CommandResult empty = validate(" --set parallel.recompute=selective --set 'parallel.recompute_modules=[]'");
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("recompute = \"selective\" would recompute nothing"), std::string::npos) << empty.output;

  if (!std::filesystem::exists(std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-kernels-fused.so"))
    GTEST_SKIP() << "kernels-fused is not built (no CUDA)";
  // kernels-fused declares both features, so validate (which binds nothing) takes them; what it
  // refuses for a plugin that declares neither is kernels_activation_memory_test's.
  const CommandResult fused = validate(
      " --set parallel.tensor=2 --set launch.nproc_per_node=2 --set parallel.sequence_parallel=true "
      "--set parallel.recompute=selective --set plugins.kernels='\"kernels-fused\"' "
      "--set precision.params='\"bf16\"' --set plugins.communicator='\"comm-nccl\"'");
  EXPECT_EQ(fused.exit_code, 0) << fused.output;
  EXPECT_EQ(fused.output.find("runs no"), std::string::npos) << fused.output;
}

}  // namespace
}  // namespace ptdp::test
