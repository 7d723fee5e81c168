#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ptdp/error.hpp"
#include "schedule/chrome_trace.hpp"
#include "schedule/schedule_timeline.hpp"
#include "test_schedules.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

const nlohmann::json* find_event(const nlohmann::json& doc, const std::string& name, const std::string& phase) {
  for (const auto& e : doc["traceEvents"])
    if (e["name"] == name && e["ph"] == phase) return &e;
  return nullptr;
}

TEST(ChromeTrace, EventsRoundTripThroughJson) {
  ChromeTrace trace;
  trace.set_process_name(3, "rank 3");
  trace.set_thread_name(3, 1, "stream \"compute\"");
  trace.add_span("F2.1", "forward", 3, 1, 1500.0, 250.5, {{"microbatch", int64_t{2}}, {"note", std::string("a\nb")}});
  trace.add_instant("step end", "step", 3, 1, 2000.0);
  trace.add_counter("memory", 3, 1750.0, {{"activations_mib", 12.5}});
  const nlohmann::json doc = nlohmann::json::parse(trace.to_json());
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  ASSERT_EQ(doc["traceEvents"].size(), 6u);

  const auto* span = find_event(doc, "F2.1", "X");
  ASSERT_NE(span, nullptr);
  EXPECT_EQ((*span)["cat"], "forward");
  EXPECT_EQ((*span)["pid"], 3);
  EXPECT_EQ((*span)["tid"], 1);
  EXPECT_DOUBLE_EQ((*span)["ts"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ((*span)["dur"].get<double>(), 250.5);
  EXPECT_EQ((*span)["args"]["microbatch"], 2);
  EXPECT_EQ((*span)["args"]["note"], "a\nb");

  const auto* instant = find_event(doc, "step end", "i");
  ASSERT_NE(instant, nullptr);
  EXPECT_EQ((*instant)["s"], "t");
  const auto* counter = find_event(doc, "memory", "C");
  ASSERT_NE(counter, nullptr);
  EXPECT_DOUBLE_EQ((*counter)["args"]["activations_mib"].get<double>(), 12.5);
  const auto* thread = find_event(doc, "thread_name", "M");
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ((*thread)["args"]["name"], "stream \"compute\"");
  EXPECT_EQ((*find_event(doc, "thread_sort_index", "M"))["args"]["sort_index"], 1);
  EXPECT_EQ((*find_event(doc, "process_name", "M"))["args"]["name"], "rank 3");
}

TEST(ChromeTrace, WritesAFileAndNamesItWhenItCannot) {
  ChromeTrace trace;
  trace.add_span("x", "c", 0, 0, 0.0, 1.0);
  const auto path = std::filesystem::temp_directory_path() / "ptdp_chrome_trace_test.json";
  trace.write(path.string());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(text.str())["traceEvents"].size(), 1u);
  std::filesystem::remove(path);
  try {
    trace.write("/nonexistent-dir/t.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "trace /nonexistent-dir/t.json: cannot open for writing");
  }
}

TEST(ChromeTrace, ScheduleTimelineHasAThreadPerStageAndASpanPerOp) {
  const ScheduleShape shape{2, 1, 2};
  const SimulationResult sim = simulate_schedule(shape, lower_schedule(shape, one_f_one_b_ops(2, 2)), {});
  ChromeTrace trace;
  add_timeline_to_trace(trace, 7, shape, sim, {"sched-test"});
  const nlohmann::json doc = nlohmann::json::parse(trace.to_json());
  int spans = 0, threads = 0;
  for (const auto& e : doc["traceEvents"]) {
    EXPECT_EQ(e["pid"], 7);
    if (e["ph"] == "X") ++spans;
    if (e["name"] == "thread_name") ++threads;
  }
  EXPECT_EQ(spans, 8);
  EXPECT_EQ(threads, 2);
  const auto* b0 = find_event(doc, "B0", "X");
  ASSERT_NE(b0, nullptr);
  EXPECT_EQ((*b0)["cat"], "backward");
  // Stage 0's B0 runs from 4 to 6 ms of simulated time: microseconds in the trace.
  bool stage0_b0 = false;
  for (const auto& e : doc["traceEvents"])
    if (e["name"] == "B0" && e["tid"] == 0) {
      stage0_b0 = true;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 4000.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2000.0);
      EXPECT_EQ(e["args"]["virtual_stage"], 0);
    }
  EXPECT_TRUE(stage0_b0);
  EXPECT_EQ((*find_event(doc, "process_name", "M"))["args"]["name"], "sched-test p=2 v=1 m=2 (simulated)");
}

}  // namespace
}  // namespace ptdp
