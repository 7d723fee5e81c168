// The forward-only schedule of validation and eval: every (microbatch, chunk) forward once per
// stage, in microbatch-major order, and the stages' streams finish together.
#include "schedule/forward_only_schedule.hpp"

#include <gtest/gtest.h>

#include "schedule/schedule_error.hpp"

namespace ptdp {
namespace {

std::vector<ComputeOp> computes(const InstructionStream& stream) {
  std::vector<ComputeOp> ops;
  for (const Instruction& i : stream)
    if (i.kind == Instruction::Kind::Compute) ops.push_back(i.op);
  return ops;
}

class ForwardOnlySchedule : public ::testing::TestWithParam<ScheduleShape> {};

TEST_P(ForwardOnlySchedule, EveryStageRunsEachForwardOnceAndTheStreamsFinishTogether) {
  const ScheduleShape shape = GetParam();
  const std::vector<InstructionStream> streams = verified_forward_only_streams(shape);
  ASSERT_EQ(streams.size(), size_t(shape.stages));
  for (int s = 0; s < shape.stages; ++s) {
    std::vector<ComputeOp> want;
    for (int mb = 0; mb < shape.microbatches; ++mb)
      for (int c = 0; c < shape.chunks; ++c) want.push_back({OpKind::Forward, mb, c});
    EXPECT_EQ(computes(streams[s]), want) << "stage " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ForwardOnlySchedule,
                         ::testing::Values(ScheduleShape{1, 1, 1}, ScheduleShape{2, 1, 4}, ScheduleShape{4, 1, 3},
                                           ScheduleShape{2, 2, 4}, ScheduleShape{4, 2, 8}, ScheduleShape{3, 3, 1}),
                         [](const auto& info) {
                           return "p" + std::to_string(info.param.stages) + "v" + std::to_string(info.param.chunks) +
                                  "m" + std::to_string(info.param.microbatches);
                         });

TEST(ForwardOnlySchedule, AShapeOutOfRangeIsRefused) {
  EXPECT_THROW(verified_forward_only_streams(ScheduleShape{0, 1, 1}), Error);
}

}  // namespace
}  // namespace ptdp
