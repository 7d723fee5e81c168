// The distributed optimizer (parallel.distributed_optimizer): gradients reduce-scattered, each
// data-parallel rank updating its 1/d shard of the fp32 master weights and Adam moments, the
// weights all-gathered. It keeps the single-rank losses and weights, divides the master weights
// and moments per rank by d, saves
// checkpoints that resume under another layout, and its bucket reductions run during the backward.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "checkpoint/safetensors_reader.hpp"
#include "host_run.hpp"
#include "trace_spans.hpp"
#include "layout.hpp"

namespace ptdp::test {
namespace {

// Every tensor of a checkpoint step, whole, by the Hugging Face names `export hf` gives them.
std::map<std::string, NamedF32Tensor> exported_weights(const std::string& checkpoint_dir) {
  const std::string out = checkpoint_dir + "-hf";
  const CommandResult exported = run_host_command("export hf " + checkpoint_dir + " " + out);
  if (exported.exit_code != 0) ADD_FAILURE() << exported.output;
  return read_safetensors(out + "/model.safetensors");
}

// The largest |a - b| over every element of every tensor.
double largest_difference(const std::map<std::string, NamedF32Tensor>& a, const std::map<std::string, NamedF32Tensor>& b) {
  double largest = 0;
  EXPECT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) {
    const auto found = b.find(name);
    if (found == b.end()) {
      ADD_FAILURE() << "no tensor " << name;
      continue;
    }
    EXPECT_EQ(found->second.values.size(), tensor.values.size()) << name;
    for (size_t i = 0; i < std::min(tensor.values.size(), found->second.values.size()); ++i)
      largest = std::max(largest, static_cast<double>(std::abs(tensor.values[i] - found->second.values[i])));
  }
  return largest;
}

class DistributedOptimizer : public ::testing::TestWithParam<Layout> {
 protected:
  static void SetUpTestSuite() {
    workspace_ = new TinyGptWorkspace();
    baseline_ = new HostRun(workspace_->run(
        {"run.steps=3", "checkpoint.every=3", "checkpoint.dir=\"" + workspace_->dir() + "/ckpt-one-rank\""}, 1));
  }
  static void TearDownTestSuite() {
    delete baseline_;
    delete workspace_;
  }
  static TinyGptWorkspace* workspace_;
  static HostRun* baseline_;
};
TinyGptWorkspace* DistributedOptimizer::workspace_ = nullptr;
HostRun* DistributedOptimizer::baseline_ = nullptr;

TEST_P(DistributedOptimizer, LossesAndWeightsAfterThreeStepsEqualSingleRank) {
  ASSERT_EQ(baseline_->exit_code, 0) << baseline_->output;
  ASSERT_EQ(baseline_->losses.size(), 3u) << baseline_->output;
  const Layout l = GetParam();
  const std::string dir = workspace_->dir() + "/ckpt-" + l.name();
  const HostRun run = workspace_->run(
      with(l.sets(), {"parallel.distributed_optimizer=true", "run.steps=3", "checkpoint.every=3", "checkpoint.dir=\"" + dir + "\""}), l.ranks());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("distributed optimizer"), std::string::npos) << run.output;
  ASSERT_EQ(run.losses.size(), baseline_->losses.size()) << run.output;
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], baseline_->losses[i], 1e-5 * std::abs(baseline_->losses[i]))
        << "step " << i + 1 << " of " << l.name();
  const double difference = largest_difference(exported_weights(workspace_->dir() + "/ckpt-one-rank"), exported_weights(dir));
  // Adam moves a weight by up to lr = 1e-3 a step; another layout's sums differ from one rank's
  // in float rounding, which moves the weights by about 1e-6 after three steps (1e-5 is 1% of a step).
  EXPECT_LT(difference, 1e-5) << l.name();
}

INSTANTIATE_TEST_SUITE_P(Layouts, DistributedOptimizer,
                         ::testing::Values(Layout{1, 1, 2, 1, false, false}, Layout{1, 1, 4, 1, false, false},
                                           Layout{2, 2, 2, 2, true, false}, Layout{1, 2, 4, 1, false, true}),
                         [](const auto& info) { return info.param.name(); });

// What rank 0's start line says it allocated for `what` ("fp32 master weights", "Adam moments"):
// "Adam moments 898.0 kB (898048 bytes)".
int64_t allocated_bytes(const std::string& output, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(what + R"( [^(]*\(([0-9]+) bytes\))"))) return -1;
  return std::stoll(m[1]);
}

TEST(DistributedOptimizerMemory, MasterWeightsAndMomentsPerRankAreDividedByD) {
  TinyGptWorkspace ws;
  const HostRun whole = ws.run({"run.steps=1", "parallel.data=4"}, 4);
  const HostRun sharded = ws.run({"run.steps=1", "parallel.data=4", "parallel.distributed_optimizer=true"}, 4);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  for (const std::string what : {"fp32 master weights", "Adam moments"}) {
    const int64_t full = allocated_bytes(whole.output, what), shard = allocated_bytes(sharded.output, what);
    ASSERT_GT(full, 0) << whole.output;
    ASSERT_GT(shard, 0) << sharded.output;
    // Only the alignment of each bucket to 64·d elements differs from an exact quarter.
    EXPECT_NEAR(static_cast<double>(shard) / static_cast<double>(full), 0.25, 0.01)
        << what << ": " << full << " and " << shard;
  }
  // The gradients stay whole: every rank's backward accumulates all of them.
  EXPECT_EQ(allocated_bytes(sharded.output, "gradients"), allocated_bytes(whole.output, "gradients"));
}

// "898.0 kB" as bytes.
double size_in_bytes(const std::string& number, const std::string& unit) {
  const std::map<std::string, double> scale = {{"B", 1}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
  return std::stod(number) * scale.at(unit);
}

TEST(DistributedOptimizerMemory, TheSummarysOptimizerStateIsWhatARankAllocates) {
  TinyGptWorkspace ws;
  for (const bool sharded : {false, true}) {
    const HostRun run = ws.run({"run.steps=1", "parallel.data=2",
                                std::string("parallel.distributed_optimizer=") + (sharded ? "true" : "false")},
                               2);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const CommandResult summary = run_host_command("validate " + ws.manifest() +
                                                   " --set parallel.data=2 --set launch.nproc_per_node=2");
    ASSERT_EQ(summary.exit_code, 0) << summary.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(summary.output, m,
                                  std::regex(R"(optimizer state ([0-9.]+) (B|kB|MB|GB) without the distributed )"
                                             R"(optimizer, ([0-9.]+) (B|kB|MB|GB) with it)")))
        << summary.output;
    const double predicted = sharded ? size_in_bytes(m[3], m[4]) : size_in_bytes(m[1], m[2]);
    // At fp32 the whole master weights are the working weights; the shard is optimizer state.
    const double allocated = static_cast<double>(allocated_bytes(run.output, "Adam moments") +
                                                 (sharded ? allocated_bytes(run.output, "fp32 master weights") : 0));
    // The buffers align every parameter to 64 elements, a few percent of this small model.
    EXPECT_NEAR(allocated / predicted, 1.0, 0.05) << run.output;
  }
}

TEST(DistributedOptimizerCheckpoint, AStepSavedUnderOneDResumesUnderAnotherLayout) {
  TinyGptWorkspace ws;
  const std::vector<std::string> common = {"run.steps=6", "optimizer.decay_steps=6", "checkpoint.every=3"};
  const HostRun whole = ws.run(with(common, {"checkpoint.dir=\"" + ws.dir() + "/ckpt-whole\""}), 1);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(whole.losses.size(), 6u) << whole.output;
  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt-sharded\"";
  const std::string sharded = "parallel.distributed_optimizer=true";
  // Buckets of about half a block, so a save and a load go through several.
  const HostRun first =
      ws.run(with(common, {dir, sharded, "run.steps=3", "parallel.data=2", "parallel.bucket_elements=5000"}), 2);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // Resharded: d 2 -> 4, p 1 -> 2 and other buckets, the moments cut again into other shards.
  const HostRun second = ws.run(
      with(common, {dir, sharded, "parallel.data=4", "parallel.pipeline=2", "parallel.bucket_elements=3000"}), 8);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  ASSERT_EQ(second.losses.size(), 3u) << second.output;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(first.losses[i], whole.losses[i], 1e-5 * std::abs(whole.losses[i])) << "step " << i + 1;
    EXPECT_NEAR(second.losses[i], whole.losses[i + 3], 1e-5 * std::abs(whole.losses[i + 3])) << "step " << i + 4;
  }
  // And without the distributed optimizer, under t 2: the step holds every moment whole.
  const std::string dir2 = "checkpoint.dir=\"" + ws.dir() + "/ckpt-whole-from-sharded\"";
  const HostRun third = ws.run(with(common, {dir2, "checkpoint.resume_from=\"" + ws.dir() + "/ckpt-sharded\"",
                                             "checkpoint.resume_step=3", "parallel.tensor=2"}),
                               2);
  ASSERT_EQ(third.exit_code, 0) << third.output;
  ASSERT_EQ(third.losses.size(), 3u) << third.output;
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(third.losses[i], whole.losses[i + 3], 1e-5 * std::abs(whole.losses[i + 3])) << "step " << i + 4;
}

TEST(GradientReductionOverlap, BucketReductionsRunOnTheirOwnLaneWhileTheBackwardGoesOn) {
  TinyGptWorkspace ws;
  const std::string trace = ws.dir() + "/trace.json";
  for (const bool sharded : {false, true}) {
    // A model whose block backward outlasts a bucket's reduction on the host, and buckets of
    // about one block (a block of h 128 has 198 272 parameters).
    const HostRun run = ws.run({"run.steps=2", "model.layers=16", "model.hidden=128", "parallel.data=2",
                                "parallel.global_batch=4",
                                "parallel.bucket_elements=190000",
                                std::string("parallel.distributed_optimizer=") + (sharded ? "true" : "false")},
                               2, "--trace " + trace + " --trace-steps 1");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto ranks = spans_by_rank(trace);
    ASSERT_EQ(ranks.size(), 2u) << run.output;
    for (const auto& [rank, spans] : ranks) {
      std::vector<Span> backward;
      double optimizer_start = 0;
      for (const Span& s : spans) {
        if (s.category == "backward") backward.push_back(s);
        if (s.name == "optimizer step") optimizer_start = s.start;
      }
      ASSERT_FALSE(backward.empty()) << "rank " << rank;
      int reductions = 0, beside_backward = 0;
      for (const Span& s : spans) {
        // The lane's other work, the sharded weights' all-gathers, has a test of its own.
        if (s.category != "data-parallel" || s.name.rfind("weight all-gather", 0) == 0) continue;
        ++reductions;
        EXPECT_NE(s.name.find(sharded ? "reduce-scatter" : "all-reduce"), std::string::npos) << s.name;
        EXPECT_NE(s.tid, backward.front().tid) << "rank " << rank << ": " << s.name << " ran on the computing thread";
        // The flush waits for every reduction before the optimizer reads the gradients.
        EXPECT_LE(s.end, optimizer_start) << "rank " << rank << ": " << s.name;
        for (const Span& b : backward)
          if (s.start < b.end && b.start < s.end) {
            ++beside_backward;
            break;
          }
      }
      EXPECT_GT(reductions, 4) << "rank " << rank << ": the gradient buffer was not cut into buckets";
      // Each bucket is handed over when the last microbatch's backward of its layers is done,
      // and the lane starts it at once, while the backward of the layers before it goes on.
      // How many of the later ones still find the backward running depends on how far the two
      // ranks drift apart on a loaded machine (each waits for the other); the first bucket,
      // handed over with fifteen of sixteen layers' backward still to run, always does.
      EXPECT_GE(beside_backward, 1) << "rank " << rank;
    }
  }
}

// Sharded, each bucket's updated master is all-gathered on the lane one bucket ahead of the next
// step's forward, which takes a layer's weights right before its first forward.
TEST(WeightAllGatherOverlap, GathersRunOnTheLaneBesideTheNextStepsForward) {
  TinyGptWorkspace ws;
  const std::string trace = ws.dir() + "/trace.json";
  const std::vector<std::string> sets = {"run.steps=3", "model.layers=16", "model.hidden=128", "parallel.data=2",
                                         "parallel.global_batch=4", "parallel.bucket_elements=190000",
                                         "parallel.distributed_optimizer=true"};
  // Steps 2 and 3: step 2's gathers meet step 3's forward.
  const HostRun run = ws.run(sets, 2, "--trace " + trace + " --trace-steps 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto ranks = spans_by_rank(trace);
  ASSERT_EQ(ranks.size(), 2u) << run.output;
  for (const auto& [rank, spans] : ranks) {
    std::vector<Span> forward, gathers;
    for (const Span& s : spans) {
      if (s.category == "forward") forward.push_back(s);
      if (s.name.rfind("weight all-gather", 0) == 0) gathers.push_back(s);
    }
    ASSERT_FALSE(forward.empty()) << "rank " << rank;
    EXPECT_GT(gathers.size(), 4u) << "rank " << rank << ": the buckets' gathers are not on the lane";
    int beside_forward = 0;
    for (const Span& g : gathers) {
      EXPECT_NE(g.tid, forward.front().tid) << "rank " << rank << ": " << g.name << " ran on the computing thread";
      for (const Span& f : forward)
        if (g.start < f.end && f.start < g.end) {
          ++beside_forward;
          break;
        }
    }
    // The first bucket's weights are taken before the first layer's forward, the second's
    // gather runs while that layer computes, and so on; how many meet a forward span on a loaded
    // two-core machine varies, as in the reduction test above.
    EXPECT_GE(beside_forward, 1) << "rank " << rank;
  }
  // Gathered on the computing thread right after Adam instead, the same model trains alike.
  const HostRun after_adam = ws.run(with(sets, {"parallel.overlap_param_gather=false"}), 2,
                                    "--trace " + trace + " --trace-steps 2");
  ASSERT_EQ(after_adam.exit_code, 0) << after_adam.output;
  for (const auto& [rank, spans] : spans_by_rank(trace))
    for (const Span& s : spans) EXPECT_NE(s.name.rfind("weight all-gather", 0), 0u) << "rank " << rank;
  ASSERT_EQ(after_adam.losses.size(), run.losses.size());
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_EQ(after_adam.losses[i], run.losses[i]) << "step " << i + 1 << ": the same sums in the same order";
}

}  // namespace
}  // namespace ptdp::test
