// A resumed run continues the learning-rate schedule it saved, and says what differs.
#include "metrics/schedule_state.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "metrics/learning_rate.hpp"

namespace ptdp {
namespace {

using ::testing::HasSubstr;

RunConfig cosine_run(int64_t steps) {
  RunConfig c;
  c.run.steps = steps;
  c.optimizer.lr = 1e-3;
  c.optimizer.min_lr = 1e-4;
  c.optimizer.warmup_steps = 2;
  c.optimizer.decay = "cosine";
  return c;
}

TEST(ScheduleState, ALongerRunKeepsTheSavedDecayInsteadOfJumpingBackUp) {
  const RunConfig first = cosine_run(60);
  const nlohmann::json saved = schedule_record(schedule_of(first));
  EXPECT_EQ(saved["decay_steps"], 60);

  const ResumedSchedule resumed = resume_schedule(cosine_run(100), saved, 60);
  EXPECT_EQ(resumed.schedule.decay_steps, 60);
  EXPECT_DOUBLE_EQ(learning_rate(resumed.schedule, 60, resumed.schedule.decay_steps), 1e-4);
  ASSERT_EQ(resumed.changes.size(), 1u);
  EXPECT_THAT(resumed.changes[0], HasSubstr("the decay keeps the 60 steps it was saved with"));
  EXPECT_THAT(resumed.changes[0], HasSubstr("set optimizer.decay_steps = 100 to stretch it"));
  // What the run did before: a new 100-step cosine, well above min_lr at step 61.
  EXPECT_GT(learning_rate(cosine_run(100).optimizer, 60, 100), 3e-4);
}

TEST(ScheduleState, AnUnchangedScheduleSaysNothing) {
  RunConfig c = cosine_run(60);
  c.optimizer.decay_steps = 80;
  const ResumedSchedule resumed = resume_schedule(c, schedule_record(schedule_of(c)), 30);
  EXPECT_TRUE(resumed.changes.empty());
  EXPECT_EQ(resumed.schedule.decay_steps, 80);
}

TEST(ScheduleState, AKeyTheManifestChangesWinsAndTheJumpIsSaid) {
  const nlohmann::json saved = schedule_record(schedule_of(cosine_run(60)));
  RunConfig changed = cosine_run(60);
  changed.optimizer.lr = 2e-3;
  const ResumedSchedule resumed = resume_schedule(changed, saved, 30);
  EXPECT_DOUBLE_EQ(resumed.schedule.lr, 2e-3);
  ASSERT_EQ(resumed.changes.size(), 1u);
  EXPECT_THAT(resumed.changes[0], HasSubstr("optimizer.lr 0.001 -> 0.002"));
  EXPECT_THAT(resumed.changes[0], HasSubstr("the rate of step 31 is"));
}

TEST(ScheduleState, ACheckpointWithoutARecordContinuesWithTheManifest) {
  const ResumedSchedule resumed = resume_schedule(cosine_run(100), nullptr, 60);
  EXPECT_EQ(resumed.schedule.decay_steps, 100);
  ASSERT_EQ(resumed.changes.size(), 1u);
  EXPECT_THAT(resumed.changes[0], HasSubstr("holds no learning-rate schedule"));
}

}  // namespace
}  // namespace ptdp
