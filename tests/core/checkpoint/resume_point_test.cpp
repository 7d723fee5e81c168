// Where a run starts in its checkpoint folder, and the refusals that keep two runs apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checkpoint/resume_point.hpp"
#include "ptdp/error.hpp"

namespace ptdp::test {
namespace {

using ::testing::HasSubstr;

RunConfig config_with(bool resume, int64_t steps) {
  RunConfig c;
  c.checkpoint.dir = "/ckpt/run";
  c.checkpoint.resume = resume;
  c.run.steps = steps;
  return c;
}

std::string refusal(const RunConfig& c, const std::vector<int64_t>& committed,
                    const std::vector<int64_t>& source = {}) {
  try {
    resume_point(c, committed, source);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "resume_point accepted the folder";
  return "";
}

TEST(ResumePoint, AnEmptyFolderStartsFromTheBeginningEitherWay) {
  EXPECT_EQ(resume_point(config_with(true, 10), {}), std::nullopt);
  EXPECT_EQ(resume_point(config_with(false, 10), {}), std::nullopt);
}

TEST(ResumePoint, ResumeContinuesFromTheNewestStep) {
  EXPECT_EQ(resume_point(config_with(true, 10), {2, 4, 6})->step, 6);
  EXPECT_EQ(resume_point(config_with(true, 10), {2, 4, 6})->dir, "/ckpt/run");
  EXPECT_EQ(resume_point(config_with(true, 6), {2, 4, 6})->step, 6) << "a finished run resumes to do nothing";
}

TEST(ResumePoint, ResumeFalseIntoAnotherRunsStepsIsRefusedNamingThem) {
  const std::string message = refusal(config_with(false, 2), {2, 4});
  EXPECT_THAT(message, HasSubstr("/ckpt/run holds committed steps 2, 4"));
  EXPECT_THAT(message, HasSubstr("checkpoint.resume = false"));
  EXPECT_THAT(message, HasSubstr("nothing was changed"));
  EXPECT_THAT(refusal(config_with(false, 9), {3}), HasSubstr("holds committed step 3 of another run"));
}

TEST(ResumePoint, AStepBeyondTheRunIsRefused) {
  EXPECT_THAT(refusal(config_with(true, 4), {2, 6}), HasSubstr("step 6 is beyond run.steps = 4"));
}

RunConfig branching_from(const std::string& source, int64_t step) {
  RunConfig c = config_with(true, 10);
  c.checkpoint.resume_from = source;
  c.checkpoint.resume_step = step;
  return c;
}

TEST(ResumePoint, AChosenStepOfAnotherFolderStartsANewLineOfSteps) {
  const auto point = resume_point(branching_from("/ckpt/old", 4), {}, {2, 4, 6});
  ASSERT_TRUE(point);
  EXPECT_EQ(point->dir, "/ckpt/old");
  EXPECT_EQ(point->step, 4);
  EXPECT_EQ(resume_point(branching_from("/ckpt/old", 0), {}, {2, 4, 6})->step, 6) << "0: the newest";
}

TEST(ResumePoint, StartingFromAnotherFolderNeedsAnEmptyOneToWriteIn) {
  EXPECT_THAT(refusal(branching_from("/ckpt/old", 4), {8}, {2, 4, 6}),
              HasSubstr("/ckpt/run holds committed step 8 of another run, and checkpoint.resume_from starts a new line"));
  EXPECT_THAT(refusal(branching_from("/ckpt/old", 5), {}, {2, 4, 6}),
              HasSubstr("checkpoint.resume_step = 5: /ckpt/old holds committed steps 2, 4, 6, not that one"));
  EXPECT_THAT(refusal(branching_from("/ckpt/old", 0), {}, {}), HasSubstr("/ckpt/old holds no committed step"));
}

TEST(ResumePoint, AnEarlierStepOfTheSameFolderIsRefused) {
  RunConfig same = branching_from("/ckpt/run", 4);
  EXPECT_THAT(refusal(same, {2, 4, 6}), HasSubstr("would mix the two lines of steps"));
  EXPECT_EQ(resume_point(branching_from("/ckpt/run", 6), {2, 4, 6})->step, 6) << "its newest step is a plain resume";
}

TEST(StepList, LongListsShowBothEnds) {
  EXPECT_EQ(step_list({}), "none");
  EXPECT_EQ(step_list({5}), "5");
  EXPECT_EQ(step_list({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), "1, 2, 3, 4, 5, ..., 8, 9, 10, 11, 12");
}

}  // namespace
}  // namespace ptdp::test
