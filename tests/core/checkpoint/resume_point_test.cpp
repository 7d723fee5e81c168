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

std::string refusal(const RunConfig& c, const std::vector<int64_t>& committed) {
  try {
    resume_point(c, committed);
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
  EXPECT_EQ(resume_point(config_with(true, 10), {2, 4, 6}), 6);
  EXPECT_EQ(resume_point(config_with(true, 6), {2, 4, 6}), 6) << "a finished run resumes to do nothing";
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

TEST(StepList, LongListsShowBothEnds) {
  EXPECT_EQ(step_list({}), "none");
  EXPECT_EQ(step_list({5}), "5");
  EXPECT_EQ(step_list({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), "1, 2, 3, 4, 5, ..., 8, 9, 10, 11, 12");
}

}  // namespace
}  // namespace ptdp::test
