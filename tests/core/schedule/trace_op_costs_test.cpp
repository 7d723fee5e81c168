// The simulator's op costs read from a run's trace: the median span of each kind, per stage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ptdp/error.hpp"
#include "schedule/chrome_trace.hpp"
#include "schedule/trace_op_costs.hpp"

namespace ptdp {
namespace {

class TraceOpCosts : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  // Spans as the executor records them (op_label with the chunk, op_kind_category), in us.
  void span(const std::string& category, double duration_us) {
    trace_.add_span("op", category, 0, 0, start_, duration_us);
    start_ += duration_us;
  }
  std::string written() {
    trace_.write(path_);
    return path_;
  }
  ChromeTrace trace_;
  double start_ = 0;
  std::string path_ = (std::filesystem::temp_directory_path() / "ptdp_trace_op_costs_test.json").string();
};

TEST_F(TraceOpCosts, SplitBackwardGivesTheMediansOfFBAndW) {
  for (double f : {1000.0, 4000.0, 2000.0}) span("forward", f);  // median 2 ms
  for (double b : {3000.0, 2500.0, 9000.0}) span("backward (input)", b);
  for (double w : {500.0, 1500.0, 1000.0}) span("backward (weight)", w);
  span("p2p", 50000.0);  // transfers are not compute
  const SimulationOptions costs = op_costs_from_trace(written(), 1, {});
  EXPECT_DOUBLE_EQ(costs.t_forward, 2.0);
  EXPECT_DOUBLE_EQ(costs.t_backward, 3.0 + 1.0);
  EXPECT_DOUBLE_EQ(costs.weight_time(), 1.0);
}

// A chunk's span is 1/v of a stage's time; a whole backward leaves t_w to the simulator's default.
TEST_F(TraceOpCosts, ChunksScaleToTheStageAndAWholeBackwardKeepsTheDefaultSplit) {
  span("forward", 1000.0);
  span("forward", 3000.0);  // median of two: their mean
  span("backward", 4000.0);
  SimulationOptions base;
  base.transfers_posted_ahead = true;
  base.transfer_latency = 0.25;
  const SimulationOptions costs = op_costs_from_trace(written(), 2, base);
  EXPECT_DOUBLE_EQ(costs.t_forward, 4.0);
  EXPECT_DOUBLE_EQ(costs.t_backward, 8.0);
  EXPECT_DOUBLE_EQ(costs.weight_time(), 4.0);
  EXPECT_TRUE(costs.transfers_posted_ahead);
  EXPECT_DOUBLE_EQ(costs.transfer_latency, 0.25);
}

// Kernels that do not split run nothing in the W: its cost is that nothing, not half the backward.
TEST_F(TraceOpCosts, EmptyWeightSpansGiveANearZeroWeightTime) {
  span("forward", 1000.0);
  span("backward (input)", 2000.0);
  span("backward (weight)", 0.0);
  const SimulationOptions costs = op_costs_from_trace(written(), 1, {});
  EXPECT_DOUBLE_EQ(costs.t_backward, 2.0);
  EXPECT_LT(costs.weight_time(), 1e-6);
}

TEST_F(TraceOpCosts, RefusesFilesThatAreNoTraceOfARun) {
  EXPECT_THROW(op_costs_from_trace("/nonexistent/trace.json", 1, {}), Error);
  span("backward", 1000.0);
  try {
    op_costs_from_trace(written(), 1, {});
    ADD_FAILURE() << "a trace without forwards was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path_ + ": the trace has no forward spans (write one with ptdp-host run --trace)");
  }
  std::ofstream(path_) << "{not json";
  EXPECT_THROW(op_costs_from_trace(path_, 1, {}), Error);
}

}  // namespace
}  // namespace ptdp
