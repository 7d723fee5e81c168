// fp16's dynamic loss scale as a state machine: halving after `hysteresis` overflows in a row,
// doubling after `window` clean steps, stopping rather than going below the minimum, and the
// state a checkpoint keeps.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <ptdp/error.hpp>

#include "runtime/loss_scaler.hpp"

namespace ptdp {
namespace {

RunConfig::Precision settings(double initial, int64_t window, double min, int64_t hysteresis) {
  RunConfig::Precision p;
  p.params = "fp16";
  p.loss_scale_initial = initial;
  p.loss_scale_window = window;
  p.loss_scale_min = min;
  p.loss_scale_hysteresis = hysteresis;
  return p;
}

TEST(LossScaler, StartsFromTheManifestsDefaults) {
  LossScaler scaler(RunConfig::Precision{});
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.state(), LossScaleState{});
}

TEST(LossScaler, WithoutHysteresisEveryOverflowHalvesAndIsSkipped) {
  LossScaler scaler(settings(1024, 1000, 1, 1));
  const LossScaleUpdate u = scaler.update(true);
  EXPECT_TRUE(u.skipped);
  EXPECT_FALSE(u.below_minimum);
  EXPECT_EQ(u.scale_before, 1024);
  EXPECT_EQ(u.scale_after, 512);
  EXPECT_EQ(scaler.scale(), 512.0f);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 256.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 2);
}

TEST(LossScaler, HysteresisHalvesOnlyFromTheNthOverflowInARow) {
  LossScaler scaler(settings(1024, 1000, 1, 3));
  EXPECT_EQ(scaler.update(true).scale_after, 1024);  // 1st in a row: skipped, kept
  EXPECT_EQ(scaler.update(true).scale_after, 1024);  // 2nd
  EXPECT_EQ(scaler.update(true).scale_after, 512);   // 3rd: halved
  EXPECT_EQ(scaler.update(true).scale_after, 256);   // and every further one of the same run
  EXPECT_FALSE(scaler.update(false).skipped);        // a clean step starts the count again
  EXPECT_EQ(scaler.update(true).scale_after, 256);
  EXPECT_EQ(scaler.update(true).scale_after, 256);
  EXPECT_EQ(scaler.update(true).scale_after, 128);
  EXPECT_EQ(scaler.state().skipped_steps, 7);
  EXPECT_EQ(scaler.state().overflows_in_a_row, 3);
}

TEST(LossScaler, DoublesAfterAWindowOfCleanStepsInARow) {
  LossScaler scaler(settings(1024, 3, 1, 1));
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(scaler.update(false).scale_after, 2048);  // the 3rd clean step
  EXPECT_EQ(scaler.state().clean_steps, 0);           // the window starts again
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.update(false).scale_after, 4096);
  // An overflow starts the window again: two clean steps after it do not double.
  scaler.update(false);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 2048.0f);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 2048.0f);
  EXPECT_EQ(scaler.update(false).scale_after, 4096);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
}

TEST(LossScaler, NeverDoublesBeyondTheLargestFloat) {
  LossScaler scaler(settings(std::ldexp(1.0, 127), 1, 1, 1));
  EXPECT_EQ(scaler.update(false).scale_after, std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isfinite(scaler.scale()));
}

TEST(LossScaler, AHalvingBelowTheMinimumIsNotMadeAndSaysSo) {
  LossScaler scaler(settings(4, 1000, 2, 1));
  EXPECT_EQ(scaler.update(true).scale_after, 2);  // down to the minimum itself is allowed
  const LossScaleUpdate u = scaler.update(true);
  EXPECT_TRUE(u.below_minimum);
  EXPECT_EQ(u.scale_before, 2);
  EXPECT_EQ(scaler.scale(), 2.0f);
  EXPECT_EQ(below_minimum_error(9, u, 2),
            "step 9: gradient overflow at loss scale 2, and halving it would go below precision.loss_scale_min (2); "
            "stopping, with the weights as the last step that updated them left them");
  // Under hysteresis the first overflows of a run keep the scale: no stop yet.
  LossScaler patient(settings(2, 1000, 2, 2));
  EXPECT_FALSE(patient.update(true).below_minimum);
  EXPECT_TRUE(patient.update(true).below_minimum);
}

TEST(LossScaler, TheLogLineSaysWhatTheStepDid) {
  LossScaler scaler(settings(65536, 1000, 1, 2));
  const LossScaleUpdate kept = scaler.update(true);
  EXPECT_EQ(overflow_line(3, kept, 2),
            "step 3: gradient overflow at loss scale 65536; step skipped, loss scale kept until 2 overflowing steps in "
            "a row (precision.loss_scale_hysteresis)");
  const LossScaleUpdate halved = scaler.update(true);
  EXPECT_EQ(overflow_line(4, halved, 2), "step 4: gradient overflow at loss scale 65536; step skipped, loss scale now 32768");
}

TEST(LossScaler, TheStateGoesThroughACheckpointWhole) {
  LossScaler scaler(settings(1024, 3, 1, 2));
  for (bool overflow : {false, true, true, true, false, false}) scaler.update(overflow);
  const nlohmann::json saved = nlohmann::json::parse(loss_scale_json(scaler.state()).dump());
  LossScaler resumed(settings(1024, 3, 1, 2));
  resumed.restore(loss_scale_from_json(saved, "ckpt step 6"));
  EXPECT_EQ(resumed.state(), scaler.state());
  EXPECT_EQ(resumed.scale(), 256.0f);
  // Both go on alike: the next clean step completes the window in both.
  EXPECT_EQ(resumed.update(false).scale_after, scaler.update(false).scale_after);
  EXPECT_EQ(resumed.state(), scaler.state());
}

TEST(LossScaler, ADamagedRecordIsRefusedNamingTheStep) {
  auto refusal = [](const nlohmann::json& record) {
    try {
      loss_scale_from_json(record, "ckpt step 4");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal(nlohmann::json::array()), "ckpt step 4: the loss scale record is not an object");
  EXPECT_EQ(refusal({{"scale", -1}, {"clean_steps", 0}, {"overflows_in_a_row", 0}, {"skipped_steps", 0}}),
            "ckpt step 4: the loss scale record lacks a positive finite 'scale'");
  EXPECT_EQ(refusal({{"scale", 8}, {"clean_steps", 0}, {"overflows_in_a_row", 0}}),
            "ckpt step 4: the loss scale record lacks a count 'skipped_steps'");
}

}  // namespace
}  // namespace ptdp
