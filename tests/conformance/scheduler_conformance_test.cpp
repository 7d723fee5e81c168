// The Scheduler conformance suite: what every scheduler plugin must give for every shape it
// serves, written once and run for every scheduler named in PTDP_CONFORMANCE_SCHEDULER
// (comma-separated names or paths; default every scheduler the build made), each loaded through
// the core's plugin registry and used only through the interface. The out-of-tree example
// (examples/sched-gpipe) is held to the installed copy of it (tests/sdk).
//
// A shape is served or refused with one line. A served shape's ops hold each (microbatch, chunk)
// exactly once forward and once backward on every stage, the same on every call; its streams pass
// the core's verifier; replayed, no op starts before the ops it depends on ended; and the peak
// activations the verifier reports (what `schedule`, `validate` and the planner show) are those
// the ops keep alive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"
#include "support/plugins_under_test.hpp"

namespace ptdp::conformance {
namespace {

std::vector<std::string> schedulers_under_test() {
  return test::plugins_under_test("PTDP_CONFORMANCE_SCHEDULER", ',', PluginKind::Scheduler);
}

std::string test_name(const std::string& name_or_path) {
  std::string name = std::filesystem::path(name_or_path).stem().string();
  if (name.rfind("libptdp-", 0) == 0) name = name.substr(8);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

std::string shape_text(const ScheduleShape& s) {
  return "p=" + std::to_string(s.stages) + " v=" + std::to_string(s.chunks) + " m=" + std::to_string(s.microbatches);
}

// Every shape with p in 1..6, v in 1..3, m in 1..12.
std::vector<ScheduleShape> shapes() {
  std::vector<ScheduleShape> out;
  for (int p = 1; p <= 6; ++p)
    for (int v = 1; v <= 3; ++v)
      for (int m = 1; m <= 12; ++m) out.push_back({p, v, m});
  return out;
}

class SchedulerConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
    scheduler_ = create_plugin<Scheduler>(registry.load(GetParam(), PluginKind::Scheduler), toml::table{});
  }

  // Every stage's ops, or nullopt when the scheduler refuses the shape (with one line).
  std::optional<std::vector<std::vector<ComputeOp>>> ops_of(const ScheduleShape& shape) {
    try {
      return collect_schedule(*scheduler_, shape);
    } catch (const Error& e) {
      const std::string why = e.what();
      EXPECT_FALSE(why.empty()) << shape_text(shape);
      EXPECT_EQ(why.find('\n'), std::string::npos) << shape_text(shape) << ": " << why;
      return std::nullopt;
    }
  }

  std::shared_ptr<Scheduler> scheduler_;
};

TEST_P(SchedulerConformance, ServesSomeShapeAndRefusesOthersInOneLine) {
  int served = 0;
  for (const ScheduleShape& shape : shapes()) served += ops_of(shape).has_value();
  EXPECT_GT(served, 0) << GetParam() << " serves none of the shapes p 1..6, v 1..3, m 1..12";
}

TEST_P(SchedulerConformance, EveryOpExactlyOnceBackwardAfterForward) {
  for (const ScheduleShape& shape : shapes()) {
    const auto ops = ops_of(shape);
    if (!ops) continue;
    ASSERT_EQ(static_cast<int>(ops->size()), shape.stages) << shape_text(shape);
    for (int s = 0; s < shape.stages; ++s) {
      std::map<std::tuple<int, int, OpKind>, int> seen;  // (microbatch, chunk, kind) -> position
      const auto& stage = (*ops)[s];
      for (int i = 0; i < static_cast<int>(stage.size()); ++i) {
        const ComputeOp& op = stage[i];
        ASSERT_TRUE(op.microbatch >= 0 && op.microbatch < shape.microbatches && op.chunk >= 0 &&
                    op.chunk < shape.chunks)
            << shape_text(shape) << " stage " << s << " op " << i << " is outside the shape";
        ASSERT_TRUE(seen.emplace(std::make_tuple(op.microbatch, op.chunk, op.kind), i).second)
            << shape_text(shape) << " stage " << s << " runs op " << i << " twice";
      }
      ASSERT_EQ(seen.size(), static_cast<size_t>(2 * shape.microbatches * shape.chunks))
          << shape_text(shape) << " stage " << s << " leaves ops out";
      for (int mb = 0; mb < shape.microbatches; ++mb)
        for (int c = 0; c < shape.chunks; ++c)
          EXPECT_LT(seen.at({mb, c, OpKind::Forward}), seen.at({mb, c, OpKind::Backward}))
              << shape_text(shape) << " stage " << s << ": backward of microbatch " << mb << " chunk " << c
              << " before its forward";
    }
  }
}

// Every rank asks for its own stage: they must all get the same step.
TEST_P(SchedulerConformance, SameOpsOnEveryCall) {
  for (const ScheduleShape& shape : shapes()) {
    const auto first = ops_of(shape);
    if (!first) continue;
    EXPECT_EQ(*first, collect_schedule(*scheduler_, shape)) << shape_text(shape);
  }
}

TEST_P(SchedulerConformance, VerifierAcceptsEveryServedShape) {
  for (const ScheduleShape& shape : shapes()) {
    if (!ops_of(shape)) continue;
    EXPECT_NO_THROW(plan_schedule(*scheduler_, shape)) << shape_text(shape);
  }
}

// Replayed with uniform op times: a forward starts after the previous virtual stage's forward of
// its microbatch ended, a backward after the next virtual stage's backward (or, on the last one,
// its own forward).
TEST_P(SchedulerConformance, NoOpStartsBeforeWhatItDependsOn) {
  for (const ScheduleShape& shape : shapes()) {
    if (!ops_of(shape)) continue;
    const PipelineSchedule plan = plan_schedule(*scheduler_, shape);
    const SimulationResult replay = simulate_schedule(shape, plan.streams, {1.0, 2.0, 0.0});
    const int p = shape.stages, virtual_stages = shape.stages * shape.chunks;
    std::map<std::tuple<OpKind, int, int>, TimedOp> at;  // (kind, microbatch, virtual stage)
    for (int s = 0; s < p; ++s)
      for (const TimedOp& t : replay.timelines[s]) at[{t.op.kind, t.op.microbatch, t.op.chunk * p + s}] = t;
    ASSERT_EQ(at.size(), static_cast<size_t>(2 * shape.microbatches * virtual_stages)) << shape_text(shape);
    for (int mb = 0; mb < shape.microbatches; ++mb)
      for (int k = 0; k < virtual_stages; ++k) {
        const TimedOp& forward = at.at({OpKind::Forward, mb, k});
        const TimedOp& backward = at.at({OpKind::Backward, mb, k});
        if (k > 0) {
          EXPECT_GE(forward.start, at.at({OpKind::Forward, mb, k - 1}).end) << shape_text(shape);
        }
        const TimedOp& before = k + 1 < virtual_stages ? at.at({OpKind::Backward, mb, k + 1}) : forward;
        EXPECT_GE(backward.start, before.end) << shape_text(shape) << " microbatch " << mb << " virtual stage " << k;
      }
  }
}

// The most (microbatch, chunk) activation sets alive at once on each stage, counted from the ops:
// a forward's set lives until its backward.
TEST_P(SchedulerConformance, PeakActivationsAreWhatTheOpsKeepAlive) {
  for (const ScheduleShape& shape : shapes()) {
    const auto ops = ops_of(shape);
    if (!ops) continue;
    const PipelineSchedule plan = plan_schedule(*scheduler_, shape);
    ASSERT_EQ(static_cast<int>(plan.report.peak_activations.size()), shape.stages) << shape_text(shape);
    for (int s = 0; s < shape.stages; ++s) {
      int alive = 0, peak = 0;
      for (const ComputeOp& op : (*ops)[s]) {
        alive += op.kind == OpKind::Forward ? 1 : -1;
        peak = std::max(peak, alive);
      }
      EXPECT_EQ(plan.report.peak_activations[s], peak) << shape_text(shape) << " stage " << s;
      EXPECT_LE(peak, shape.microbatches * shape.chunks) << shape_text(shape) << " stage " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, SchedulerConformance, ::testing::ValuesIn(schedulers_under_test()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return test_name(info.param); });

}  // namespace
}  // namespace ptdp::conformance
