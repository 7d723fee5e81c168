#include <gtest/gtest.h>

#include "schedule/instruction_stream.hpp"
#include "schedule/schedule_error.hpp"
#include "schedule/schedule_verifier.hpp"
#include "test_schedules.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;
using Dir = Transfer::Direction;
using Pay = Transfer::Payload;

Instruction compute(ComputeOp op) { return Instruction{Instruction::Kind::Compute, op, {}}; }
Instruction exchange(std::vector<Transfer> transfers) {
  return Instruction{Instruction::Kind::Exchange, {}, std::move(transfers)};
}

void expect_streams_equal(const InstructionStream& want, const InstructionStream& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("instruction " + std::to_string(i));
    EXPECT_EQ(want[i].kind, got[i].kind);
    if (want[i].kind == Instruction::Kind::Compute)
      EXPECT_EQ(want[i].op, got[i].op);
    else
      EXPECT_EQ(want[i].transfers, got[i].transfers);
  }
}

// Which ops of a stage run back to back with no exchange between them.
std::vector<bool> exchange_after_each_op(const InstructionStream& stream) {
  std::vector<bool> after;
  for (size_t i = 0; i < stream.size(); ++i)
    if (stream[i].kind == Instruction::Kind::Compute)
      after.push_back(i + 1 < stream.size() && stream[i + 1].kind == Instruction::Kind::Exchange);
  return after;
}

TEST(LowerSchedule, OneChunkPerStageExchangesAfterEveryOpWithTheNextOpsInput) {
  const ScheduleShape shape{2, 1, 2};
  const StageOps ops = one_f_one_b_ops(2, 2);  // stage 0: F0 F1 B0 B1, stage 1: F0 B0 F1 B1
  const auto streams = lower_schedule(shape, ops);
  ASSERT_EQ(streams.size(), 2u);
  // Stage 0 reads the data (no receive before F0) and its backward gradients go nowhere.
  expect_streams_equal({compute(F(0)),
                        exchange({{Dir::Send, Pay::Activation, 0, 0, 1}}),
                        compute(F(1)),
                        exchange({{Dir::Send, Pay::Activation, 1, 0, 1}, {Dir::Recv, Pay::Gradient, 0, 1, 1}}),
                        compute(B(0)),
                        exchange({{Dir::Recv, Pay::Gradient, 1, 1, 1}}),
                        compute(B(1))},
                       streams[0]);
  // Stage 1 holds the last virtual stage: its forward feeds its own backward, nothing is sent.
  expect_streams_equal({exchange({{Dir::Recv, Pay::Activation, 0, 0, 0}}),
                        compute(F(0)),
                        compute(B(0)),
                        exchange({{Dir::Send, Pay::Gradient, 0, 1, 0}, {Dir::Recv, Pay::Activation, 1, 0, 0}}),
                        compute(F(1)),
                        compute(B(1)),
                        exchange({{Dir::Send, Pay::Gradient, 1, 1, 0}})},
                       streams[1]);
}

TEST(LowerSchedule, TransferNamesTheBufferTheSameAtBothEnds) {
  Transfer activation{Dir::Send, Pay::Activation, 3, 4, 1};
  EXPECT_EQ(activation.target_virtual_stage(), 5);
  Transfer gradient{Dir::Recv, Pay::Gradient, 3, 4, 0};
  EXPECT_EQ(gradient.target_virtual_stage(), 3);
  EXPECT_TRUE(activation.same_buffer(Transfer{Dir::Recv, Pay::Activation, 3, 4, 0}));
  EXPECT_FALSE(activation.same_buffer(gradient));
  EXPECT_EQ(buffer_label(activation), "activation of microbatch 3 from virtual stage 4");
}

TEST(LowerSchedule, ChunksOfOneStageHandOverLocallyWithoutTransfers) {
  const ScheduleShape shape{1, 3, 2};
  StageOps ops{{F(0, 0), F(0, 1), F(0, 2), F(1, 0), B(0, 2), F(1, 1), B(0, 1), F(1, 2), B(0, 0), B(1, 2), B(1, 1),
                B(1, 0)}};
  const auto streams = lower_schedule(shape, ops);
  ASSERT_EQ(streams.size(), 1u);
  ASSERT_EQ(streams[0].size(), ops[0].size());
  for (size_t i = 0; i < ops[0].size(); ++i) {
    EXPECT_EQ(streams[0][i].kind, Instruction::Kind::Compute);
    EXPECT_EQ(streams[0][i].op, ops[0][i]);
  }
  EXPECT_EQ(verify_schedule(shape, ops, streams).peak_activations, std::vector<int>{4});
}

TEST(LowerSchedule, InterleavedForwardBackwardPairsShareOneExchange) {
  // p = 2, v = 2, m = 4 in the interleaved order; on stage 0 the 1F1B phase is F2.0 B0.1 F3.0 B1.1
  // F2.1 B0.0 F3.1 B1.0.
  const ScheduleShape shape{2, 2, 4};
  const StageOps ops{{F(0, 0), F(1, 0), F(0, 1), F(1, 1), F(2, 0), B(0, 1), F(3, 0), B(1, 1), F(2, 1), B(0, 0),
                      F(3, 1), B(1, 0), B(2, 1), B(3, 1), B(2, 0), B(3, 0)},
                     {F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), B(1, 1), F(2, 0), B(0, 0), F(3, 0), B(1, 0),
                      F(2, 1), B(2, 1), F(3, 1), B(3, 1), B(2, 0), B(3, 0)}};
  const auto streams = lower_schedule(shape, ops);
  const std::vector<bool> stage0 = exchange_after_each_op(streams[0]);
  for (size_t i = 4; i < 12; i += 2) {
    EXPECT_FALSE(stage0[i]) << "stage 0 op " << i << " is the forward of a pair";
    EXPECT_TRUE(stage0[i + 1]) << "stage 0 op " << i + 1 << " ends a pair";
  }
  for (size_t i : {0u, 1u, 2u, 3u, 12u, 13u, 14u}) EXPECT_TRUE(stage0[i]) << "stage 0 op " << i;
  // The group after the pair (F2.0, B0.1) sends both results and receives both inputs of the next
  // pair (F3.0 needs none: chunk 0 of stage 0 reads the data).
  size_t pair_end = 0;
  for (size_t i = 0, seen = 0; i < streams[0].size(); ++i)
    if (streams[0][i].kind == Instruction::Kind::Compute && ++seen == 6) pair_end = i + 1;
  EXPECT_EQ(streams[0][pair_end].transfers,
            (std::vector<Transfer>{{Dir::Send, Pay::Activation, 2, 0, 1},
                                   {Dir::Send, Pay::Gradient, 0, 2, 1},
                                   {Dir::Recv, Pay::Gradient, 1, 3, 1}}));
  EXPECT_EQ(verify_schedule(shape, ops, streams).peak_activations, (std::vector<int>{5, 3}));
}

TEST(LowerSchedule, PairWhoseBackwardNeedsItsOwnForwardIsSplit) {
  // All forwards, then all backwards, with two chunks: on stage 0, B0.1 needs the gradient of
  // stage 1's B0.1, which needs stage 0's F0.1 first. Pairing them would make stage 0 wait for
  // that gradient before running F0.1.
  const ScheduleShape shape{2, 2, 1};
  const StageOps ops{{F(0, 0), F(0, 1), B(0, 1), B(0, 0)}, {F(0, 0), F(0, 1), B(0, 1), B(0, 0)}};
  const auto streams = lower_schedule(shape, ops);
  EXPECT_EQ(exchange_after_each_op(streams[0]), (std::vector<bool>{true, true, true, false}));
  // On stage 1, F0.1 is the last virtual stage and feeds B0.1 locally: a pair.
  EXPECT_EQ(exchange_after_each_op(streams[1]), (std::vector<bool>{true, false, true, true}));
  EXPECT_NO_THROW(verify_schedule(shape, ops, streams));
}

TEST(LowerSchedule, RefusesOpsOutOfRange) {
  try {
    lower_schedule({2, 1, 4}, {{F(0), B(0)}, {F(0), F(5), B(0)}});
    FAIL() << "no error";
  } catch (const ScheduleError& e) {

    EXPECT_STREQ(e.what(), "stage 1, op 1 (Forward): microbatch 5 is out of range 0..3");
  }
  EXPECT_THROW(lower_schedule({2, 1, 4}, {{F(0), B(0)}}), ScheduleError);
  EXPECT_THROW(lower_schedule({2, 2, 4}, {{F(0, 2)}, {}}), ScheduleError);
  EXPECT_THROW(lower_schedule({0, 1, 4}, {}), ScheduleError);
}

}  // namespace
}  // namespace ptdp
