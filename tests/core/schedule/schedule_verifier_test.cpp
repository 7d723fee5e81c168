#include <gtest/gtest.h>

#include "schedule/instruction_stream.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_error.hpp"
#include "schedule/schedule_verifier.hpp"
#include "test_schedules.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;
using Dir = Transfer::Direction;
using Pay = Transfer::Payload;

// The message verify_schedule() gives, or "" when it accepts.
std::string verify_error(const ScheduleShape& shape, const StageOps& ops, const std::vector<InstructionStream>& streams) {
  try {
    verify_schedule(shape, ops, streams);
    return "";
  } catch (const ScheduleError& e) {
    return e.what();
  }
}

std::string verify_error(const ScheduleShape& shape, const StageOps& ops) {
  try {
    return verify_error(shape, ops, lower_schedule(shape, ops));
  } catch (const ScheduleError& e) {
    return e.what();
  }
}

TEST(VerifySchedule, AcceptsOneFOneBAndReportsPeakActivations) {
  const ScheduleShape shape{3, 1, 4};
  const StageOps ops = one_f_one_b_ops(3, 4);
  EXPECT_EQ(verify_schedule(shape, ops, lower_schedule(shape, ops)).peak_activations, (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(peak_activations({3, 1, 4}, gpipe_ops(3, 4)), (std::vector<int>{4, 4, 4}));
}

TEST(VerifySchedule, PlanScheduleRunsTheWholeChain) {
  ListScheduler scheduler(gpipe_ops(2, 3));
  const PipelineSchedule plan = plan_schedule(scheduler, {2, 1, 3});
  EXPECT_EQ(plan.ops, gpipe_ops(2, 3));
  EXPECT_EQ(plan.streams.size(), 2u);
  EXPECT_EQ(plan.report.peak_activations, (std::vector<int>{3, 3}));
  EXPECT_THROW(plan_schedule(scheduler, {2, 1, 0}), ScheduleError);
}

TEST(VerifySchedule, MissingOpNamesStageAndOp) {
  StageOps ops = one_f_one_b_ops(2, 2);
  ops[1].pop_back();  // stage 1 loses B1
  EXPECT_EQ(verify_error({2, 1, 2}, ops), "stage 1: the schedule has no Backward of microbatch 1, chunk 0");
  ops = one_f_one_b_ops(2, 2);
  ops[0].erase(ops[0].begin() + 1);  // stage 0 loses F1, so B1 has no forward
  EXPECT_EQ(verify_error({2, 1, 2}, ops),
            "stage 0, op 2 (B1): Backward of microbatch 1, chunk 0 has no Forward on this stage");
}

TEST(VerifySchedule, RepeatedAndMisorderedOps) {
  StageOps ops = gpipe_ops(2, 2);
  ops[0].insert(ops[0].begin() + 2, F(0));
  EXPECT_EQ(verify_error({2, 1, 2}, ops),
            "stage 0, op 2 (F0): a second Forward of microbatch 0, chunk 0 (the first is op 0)");
  ops = gpipe_ops(2, 2);
  std::swap(ops[1][1], ops[1][2]);  // stage 1: F0 B1 F1 B0
  EXPECT_EQ(verify_error({2, 1, 2}, ops),
            "stage 1, op 1 (B1): Backward of microbatch 1, chunk 0 runs before its Forward (op 2)");
}

TEST(VerifySchedule, SwappedOrderThatDeadlocksNamesEveryWaitingStage) {
  // Stage 0 wants B0 right after F0, but stage 1 runs F1 before B0 and F1 needs stage 0's F1.
  const StageOps ops{{F(0), B(0), F(1), B(1)}, {F(0), F(1), B(0), B(1)}};
  EXPECT_EQ(verify_error({2, 1, 2}, ops),
            "the streams deadlock under blocking grouped send/recv: stage 0 waits in the exchange after F0 for "
            "stage 1 to send the gradient of microbatch 0 from virtual stage 1; stage 1 waits in the exchange "
            "after F0 for stage 0 to send the activation of microbatch 1 from virtual stage 0");
}

TEST(VerifySchedule, DeadlockAcrossThreeStages) {
  // Stage 1 wants B0 right after F0, but stage 2 runs F1 before B0, and F1 needs stage 1's F1.
  const StageOps ops{{F(0), F(1), B(0), B(1)}, {F(0), B(0), F(1), B(1)}, {F(0), F(1), B(0), B(1)}};
  EXPECT_EQ(verify_error({3, 1, 2}, ops),
            "the streams deadlock under blocking grouped send/recv: stage 0 waits in the exchange after F1 for "
            "stage 1 to receive the activation of microbatch 1 from virtual stage 0 and stage 1 to send the "
            "gradient of microbatch 0 from virtual stage 1; stage 1 waits in the exchange after F0 for stage 2 to "
            "send the gradient of microbatch 0 from virtual stage 2; stage 2 waits in the exchange after F0 for "
            "stage 1 to send the activation of microbatch 1 from virtual stage 1");
}

TEST(VerifySchedule, ChunkOrderThatNeighboursDisagreeOnIsAMismatch) {
  // Stage 0 finishes microbatch 0 (both chunks) before starting microbatch 1; stage 1 expects
  // microbatch 1's chunk-0 activation before microbatch 0's chunk-1 one, which is sent first.
  const StageOps ops{{F(0, 0), F(0, 1), B(0, 1), B(0, 0), F(1, 0), F(1, 1), B(1, 1), B(1, 0)},
                     {F(0, 0), F(1, 0), F(0, 1), B(0, 1), B(0, 0), F(1, 1), B(1, 1), B(1, 0)},
                     {F(0, 0), F(0, 1), B(0, 1), B(0, 0), F(1, 0), F(1, 1), B(1, 1), B(1, 0)}};
  EXPECT_EQ(verify_error({3, 2, 2}, ops),
            "stage 1, the exchange after F0.0: its 2nd receive from stage 0 expects the activation of microbatch "
            "1 from virtual stage 0, but stage 0's 2nd send to it (the exchange after F0.1) is the activation of "
            "microbatch 0 from virtual stage 3; transfers between two stages match in posting order");
}

TEST(VerifySchedule, TransfersMatchInPostingOrder) {
  const ScheduleShape shape{2, 1, 2};
  const StageOps ops = gpipe_ops(2, 2);
  std::vector<InstructionStream> streams = lower_schedule(shape, ops);
  // Stage 1 receives both activations up front, microbatch 1's first: stage 0 sends 0 first.
  ASSERT_EQ(streams[1][0].kind, Instruction::Kind::Exchange);
  ASSERT_EQ(streams[1][2].kind, Instruction::Kind::Exchange);
  streams[1][0].transfers.insert(streams[1][0].transfers.begin(), streams[1][2].transfers.front());
  streams[1].erase(streams[1].begin() + 2);
  EXPECT_EQ(verify_error(shape, ops, streams),
            "stage 1, the exchange before the first op: its 1st receive from stage 0 expects the activation of "
            "microbatch 1 from virtual stage 0, but stage 0's 1st send to it (the exchange after F0) is the "
            "activation of microbatch 0 from virtual stage 0; transfers between two stages match in posting "
            "order");
}

TEST(VerifySchedule, StreamsMustCarryExactlyTheOpsAndTheirTransfers) {
  const ScheduleShape shape{2, 1, 2};
  const StageOps ops = one_f_one_b_ops(2, 2);
  const std::vector<InstructionStream> good = lower_schedule(shape, ops);
  ASSERT_EQ(verify_error(shape, ops, good), "");

  auto broken = good;
  std::swap(broken[0][0], broken[0][2]);  // stage 0 runs F1 first
  EXPECT_EQ(verify_error(shape, ops, broken), "stage 0, instruction 0: the stream runs F1 where the schedule has F0");

  broken = good;
  broken[1].erase(broken[1].begin());  // stage 1 never receives microbatch 0's activation
  EXPECT_EQ(verify_error(shape, ops, broken),
            "stage 1, op 0 (F0): runs before its input, the activation of microbatch 0 from virtual stage 0, "
            "was received");

  broken = good;
  broken[0][1].transfers.clear();  // stage 0 never sends microbatch 0's activation
  EXPECT_EQ(verify_error(shape, ops, broken),
            "stage 0: never sends the activation of microbatch 0 from virtual stage 0 to stage 1");

  broken = good;
  broken[0].insert(broken[0].begin(), broken[0][1]);  // ... sends it before computing it
  EXPECT_EQ(verify_error(shape, ops, broken),
            "stage 0, the exchange before the first op: sends the activation of microbatch 0 from virtual stage "
            "0 before computing it");

  broken = good;
  broken[0][3].transfers[0].peer_stage = 0;  // to itself
  EXPECT_EQ(verify_error(shape, ops, broken),
            "stage 0, the exchange after F1: sends the activation of microbatch 1 from virtual stage 0 to stage 0, "
            "but its peer is stage 1");

  broken = good;
  broken[0][3].transfers[1].source_virtual_stage = 0;  // a gradient that stage 1 does not own
  EXPECT_EQ(verify_error(shape, ops, broken),
            "stage 0, the exchange after F1: transfer of the gradient of microbatch 0 from virtual stage 0 is "
            "outside the schedule (m = 2, 2 virtual stages)");

  broken = good;
  broken[1].pop_back();  // stage 1 drops its last group (the send of B1's gradient)
  broken[1].pop_back();  // and B1 itself
  EXPECT_EQ(verify_error(shape, ops, broken), "stage 1: the stream ends before B1 (op 3 of 4)");

  EXPECT_EQ(verify_error(shape, ops, {good[0]}), "there are instruction streams for 1 stages, expected p = 2");
}

TEST(VerifySchedule, LocalHandOverIsNotATransfer) {
  const ScheduleShape shape{1, 2, 1};
  const StageOps ops{{F(0, 0), F(0, 1), B(0, 1), B(0, 0)}};
  auto streams = lower_schedule(shape, ops);
  ASSERT_EQ(verify_error(shape, ops, streams), "");
  streams[0].insert(streams[0].begin() + 1,
                    Instruction{Instruction::Kind::Exchange, {}, {{Dir::Send, Pay::Activation, 0, 0, 0}}});
  EXPECT_EQ(verify_error(shape, ops, streams),
            "stage 0, the exchange after F0.0: sends the activation of microbatch 0 from virtual stage 0 to stage "
            "0, but it stays on this stage");
}

}  // namespace
}  // namespace ptdp
