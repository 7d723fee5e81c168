#include <gtest/gtest.h>

#include <cmath>

#include "schedule/instruction_stream.hpp"
#include "schedule/schedule_error.hpp"
#include "schedule/schedule_simulator.hpp"
#include "test_schedules.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

SimulationResult simulate(const ScheduleShape& shape, const StageOps& ops, SimulationOptions options = {}) {
  return simulate_schedule(shape, lower_schedule(shape, ops), options);
}

void expect_timeline(const std::vector<TimedOp>& got, const std::vector<TimedOp>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].op, want[i].op) << "op " << i;
    EXPECT_DOUBLE_EQ(got[i].start, want[i].start) << "op " << i;
    EXPECT_DOUBLE_EQ(got[i].end, want[i].end) << "op " << i;
  }
}

TEST(SimulateSchedule, OneFOneBOnTwoStagesByHand) {
  const SimulationResult r = simulate({2, 1, 2}, one_f_one_b_ops(2, 2), {1.0, 2.0, 0.0});
  // Stage 1 starts F0 when stage 0's activation arrives, and sends B0's gradient together with
  // the receive of F1's input; stage 0 waits for each gradient.
  expect_timeline(r.timelines[0], {{F(0), 0, 1}, {F(1), 1, 2}, {B(0), 4, 6}, {B(1), 7, 9}});
  expect_timeline(r.timelines[1], {{F(0), 1, 2}, {B(0), 2, 4}, {F(1), 4, 5}, {B(1), 5, 7}});
  EXPECT_DOUBLE_EQ(r.makespan, 9.0);
  EXPECT_DOUBLE_EQ(r.ideal, 6.0);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 0.5);
}

TEST(SimulateSchedule, TransferLatencyDelaysEveryHop) {
  const SimulationResult r = simulate({2, 1, 1}, gpipe_ops(2, 1), {1.0, 2.0, 0.5});
  expect_timeline(r.timelines[0], {{F(0), 0, 1}, {B(0), 5, 7}});
  expect_timeline(r.timelines[1], {{F(0), 1.5, 2.5}, {B(0), 2.5, 4.5}});
  EXPECT_DOUBLE_EQ(r.makespan, 7.0);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 4.0 / 3.0);
}

TEST(SimulateSchedule, AChunkTakesItsShareOfTheStage) {
  const SimulationResult r = simulate({1, 2, 1}, {{F(0, 0), F(0, 1), B(0, 1), B(0, 0)}}, {1.0, 3.0, 0.0});
  expect_timeline(r.timelines[0], {{F(0, 0), 0, 0.5}, {F(0, 1), 0.5, 1}, {B(0, 1), 1, 2.5}, {B(0, 0), 2.5, 4}});
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 0.0);
}

TEST(SimulateSchedule, BubbleOfTestSchedulesMatchesThePaper) {
  for (int p = 1; p <= 5; ++p)
    for (int m = 1; m <= 9; ++m) {
      EXPECT_NEAR(simulate({p, 1, m}, one_f_one_b_ops(p, m)).bubble_fraction, (p - 1.0) / m, 1e-12) << p << " " << m;
      EXPECT_NEAR(simulate({p, 1, m}, gpipe_ops(p, m)).bubble_fraction, (p - 1.0) / m, 1e-12) << p << " " << m;
    }
}

TEST(SimulateSchedule, FormulaBubbleFraction) {
  EXPECT_DOUBLE_EQ(formula_bubble_fraction({4, 2, 8}), 0.1875);
  EXPECT_DOUBLE_EQ(formula_bubble_fraction({4, 1, 8}), 0.375);
  EXPECT_DOUBLE_EQ(formula_bubble_fraction({1, 3, 5}), 0.0);
  EXPECT_THROW(formula_bubble_fraction({4, 0, 8}), ScheduleError);
}

TEST(SimulateSchedule, RefusesBadTimesAndDeadlocks) {
  const ScheduleShape shape{2, 1, 2};
  const auto streams = lower_schedule(shape, one_f_one_b_ops(2, 2));
  try {
    simulate_schedule(shape, streams, {0.0, 2.0, 0.0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "schedule simulation: the forward time must be positive (got 0.000000)");
  }
  EXPECT_THROW(simulate_schedule(shape, streams, {1.0, -2.0, 0.0}), Error);
  EXPECT_THROW(simulate_schedule(shape, streams, {1.0, 2.0, -1.0}), Error);
  EXPECT_THROW(simulate_schedule(shape, streams, {1.0, 2.0, std::nan("")}), Error);
  EXPECT_THROW(simulate_schedule({3, 1, 2}, streams, {}), ScheduleError);
  const StageOps deadlocking{{F(0), B(0), F(1), B(1)}, {F(0), F(1), B(0), B(1)}};
  EXPECT_THROW(simulate_schedule(shape, lower_schedule(shape, deadlocking), {}), ScheduleError);
}

}  // namespace
}  // namespace ptdp
