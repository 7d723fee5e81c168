// The Scheduler conformance suite: what every scheduler plugin must give for every shape it
// serves, written once and run for every scheduler named in PTDP_CONFORMANCE_SCHEDULER
// (comma-separated names or paths; default every scheduler the build made), each loaded through
// the core's plugin registry and used only through the interface, once with its defaults and once
// for each other choice of each of its options that has choices (sched-zb's `schedule`). The
// out-of-tree example (examples/sched-gpipe) is held to the installed copy of it (tests/sdk).
//
// A shape is served or refused with one line. A served shape's ops hold, for each (microbatch,
// chunk) on every stage, one Forward and after it either one Backward or one BackwardInput and,
// after that, one BackwardWeight (ABI 1.9's split backward), the same on every call; its streams
// pass the core's verifier; replayed, with blocking groups or transfers posted ahead, no op starts
// before the ops it depends on ended; and the peak activations the verifier reports (what
// `schedule`, `validate` and the planner show) are those the ops keep alive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"
#include "support/plugins_under_test.hpp"

namespace ptdp::conformance {
namespace {

// One configuration of a scheduler under test: its name or path, and the option set ("" for the
// defaults).
struct SchedulerUnderTest {
  std::string plugin;
  std::string key, value;
};

void PrintTo(const SchedulerUnderTest& under_test, std::ostream* os) {
  *os << under_test.plugin;
  if (!under_test.key.empty()) *os << " with " << under_test.key << " = " << under_test.value;
}

std::vector<SchedulerUnderTest> schedulers_under_test() {
  static PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
  std::vector<SchedulerUnderTest> out;
  for (const std::string& plugin : test::plugins_under_test("PTDP_CONFORMANCE_SCHEDULER", ',', PluginKind::Scheduler)) {
    out.push_back({plugin, "", ""});
    const PluginDescriptor& d = *registry.load(plugin, PluginKind::Scheduler).descriptor;
    for (uint32_t k = 0; k < d.config_schema_size; ++k) {
      const ConfigKeySpec& spec = d.config_schema[k];
      if (spec.type != ConfigType::String || spec.choices == nullptr) continue;
      std::stringstream choices(spec.choices);
      for (std::string choice; std::getline(choices, choice, '|');)
        if (spec.default_value == nullptr || "\"" + choice + "\"" != spec.default_value)
          out.push_back({plugin, spec.key, choice});
    }
  }
  return out;
}

std::string test_name(const SchedulerUnderTest& under_test) {
  std::string name = std::filesystem::path(under_test.plugin).stem().string();
  if (name.rfind("libptdp-", 0) == 0) name = name.substr(8);
  if (!under_test.key.empty()) name += "_" + under_test.key + "_" + under_test.value;
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

class SchedulerConformance : public ::testing::TestWithParam<SchedulerUnderTest> {
 protected:
  void SetUp() override {
    static PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
    toml::table options;
    if (!GetParam().key.empty()) options.insert(GetParam().key, GetParam().value);
    scheduler_ = create_plugin<Scheduler>(registry.load(GetParam().plugin, PluginKind::Scheduler), options);
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
  EXPECT_GT(served, 0) << test_name(GetParam()) << " serves none of the shapes p 1..6, v 1..3, m 1..12";
}

// Where each kind of op of a (microbatch, chunk) ran on a stage, -1 where none did.
struct OpPositions {
  int forward = -1, backward = -1, input = -1, weight = -1;
  int& of(OpKind kind) {
    return kind == OpKind::Forward ? forward : kind == OpKind::Backward ? backward : kind == OpKind::BackwardInput ? input : weight;
  }
};

TEST_P(SchedulerConformance, EveryOpExactlyOnceBackwardAfterForward) {
  for (const ScheduleShape& shape : shapes()) {
    const auto ops = ops_of(shape);
    if (!ops) continue;
    ASSERT_EQ(static_cast<int>(ops->size()), shape.stages) << shape_text(shape);
    for (int s = 0; s < shape.stages; ++s) {
      std::map<std::pair<int, int>, OpPositions> seen;  // (microbatch, chunk) -> positions
      const auto& stage = (*ops)[s];
      for (int i = 0; i < static_cast<int>(stage.size()); ++i) {
        const ComputeOp& op = stage[i];
        ASSERT_TRUE(op.microbatch >= 0 && op.microbatch < shape.microbatches && op.chunk >= 0 &&
                    op.chunk < shape.chunks)
            << shape_text(shape) << " stage " << s << " op " << i << " is outside the shape";
        ASSERT_TRUE(op.kind == OpKind::Forward || op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput ||
                    op.kind == OpKind::BackwardWeight)
            << shape_text(shape) << " stage " << s << " op " << i << " is of no known kind";
        int& at = seen[{op.microbatch, op.chunk}].of(op.kind);
        ASSERT_EQ(at, -1) << shape_text(shape) << " stage " << s << " runs op " << i << " twice";
        at = i;
      }
      ASSERT_EQ(seen.size(), static_cast<size_t>(shape.microbatches * shape.chunks))
          << shape_text(shape) << " stage " << s << " leaves ops out";
      for (const auto& [unit, at] : seen) {
        const std::string what = shape_text(shape) + " stage " + std::to_string(s) + ", microbatch " +
                                 std::to_string(unit.first) + " chunk " + std::to_string(unit.second);
        ASSERT_GE(at.forward, 0) << what << " has no forward";
        if (at.backward >= 0) {
          EXPECT_LT(at.forward, at.backward) << what << ": backward before its forward";
          EXPECT_TRUE(at.input < 0 && at.weight < 0) << what << ": a backward both whole and split";
        } else {
          ASSERT_TRUE(at.input >= 0 && at.weight >= 0) << what << ": no backward, or half of a split one";
          EXPECT_LT(at.forward, at.input) << what << ": input gradient before its forward";
          EXPECT_LT(at.input, at.weight) << what << ": weight gradients before the input gradient";
        }
      }
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

// Replayed with uniform op times, with blocking groups and with transfers posted ahead: a forward
// starts after the previous virtual stage's forward of its microbatch ended, the op that computes
// the input gradient (a Backward or a BackwardInput) after the next virtual stage's one (or, on
// the last, its own forward), and a BackwardWeight after its BackwardInput.
TEST_P(SchedulerConformance, NoOpStartsBeforeWhatItDependsOn) {
  for (const ScheduleShape& shape : shapes()) {
    if (!ops_of(shape)) continue;
    const PipelineSchedule plan = plan_schedule(*scheduler_, shape);
    for (const bool posted_ahead : {false, true}) {
      const SimulationResult replay = simulate_schedule(shape, plan.streams, {1.0, 2.0, 0.0, 0.0, posted_ahead});
      const std::string what = shape_text(shape) + (posted_ahead ? " (posted ahead)" : " (blocking)");
      const int p = shape.stages, virtual_stages = shape.stages * shape.chunks;
      std::map<std::tuple<OpKind, int, int>, TimedOp> at;  // (kind, microbatch, virtual stage)
      for (int s = 0; s < p; ++s)
        for (const TimedOp& t : replay.timelines[s]) {
          const OpKind kind = t.op.kind == OpKind::BackwardInput ? OpKind::Backward : t.op.kind;
          at[{kind, t.op.microbatch, t.op.chunk * p + s}] = t;
        }
      for (int mb = 0; mb < shape.microbatches; ++mb)
        for (int k = 0; k < virtual_stages; ++k) {
          const TimedOp& forward = at.at({OpKind::Forward, mb, k});
          const TimedOp& backward = at.at({OpKind::Backward, mb, k});
          if (k > 0) {
            EXPECT_GE(forward.start, at.at({OpKind::Forward, mb, k - 1}).end) << what;
          }
          const TimedOp& before = k + 1 < virtual_stages ? at.at({OpKind::Backward, mb, k + 1}) : forward;
          EXPECT_GE(backward.start, before.end) << what << " microbatch " << mb << " virtual stage " << k;
          auto weight = at.find({OpKind::BackwardWeight, mb, k});
          if (weight != at.end()) {
            EXPECT_EQ(backward.op.kind, OpKind::BackwardInput) << what;
            EXPECT_GE(weight->second.start, backward.end) << what << " microbatch " << mb << " virtual stage " << k;
          }
        }
    }
  }
}

// The most (microbatch, chunk) activation sets alive at once on each stage, counted from the ops:
// a forward's set lives until its backward, or under a split backward until its BackwardWeight.
TEST_P(SchedulerConformance, PeakActivationsAreWhatTheOpsKeepAlive) {
  for (const ScheduleShape& shape : shapes()) {
    const auto ops = ops_of(shape);
    if (!ops) continue;
    const PipelineSchedule plan = plan_schedule(*scheduler_, shape);
    ASSERT_EQ(static_cast<int>(plan.report.peak_activations.size()), shape.stages) << shape_text(shape);
    for (int s = 0; s < shape.stages; ++s) {
      int alive = 0, peak = 0;
      for (const ComputeOp& op : (*ops)[s]) {
        if (op.kind == OpKind::Forward) ++alive;
        if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardWeight) --alive;
        peak = std::max(peak, alive);
      }
      EXPECT_EQ(plan.report.peak_activations[s], peak) << shape_text(shape) << " stage " << s;
      EXPECT_LE(peak, shape.microbatches * shape.chunks) << shape_text(shape) << " stage " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, SchedulerConformance, ::testing::ValuesIn(schedulers_under_test()),
                         [](const ::testing::TestParamInfo<SchedulerUnderTest>& info) { return test_name(info.param); });

}  // namespace
}  // namespace ptdp::conformance
