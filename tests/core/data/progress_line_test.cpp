// The progress line printed while training.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "metrics/progress_line.hpp"

namespace ptdp {
namespace {

StepMetrics example() {
  StepMetrics m;
  m.step = 12;
  m.loss = 3.21039;
  m.lr = 9.6e-4;
  m.grad_norm = 0.8412;
  m.tokens_per_s = 10230;
  m.tflops_per_gpu = 0.0123;
  return m;
}

TEST(ProgressLine, ReadsAsDocumented) {
  // ETA: 14 s for 12 steps, 28 to go at the same pace = 32.7 s.
  EXPECT_EQ(progress_line(example(), 40, 14.0),
            "step 12/40 | loss 3.2104 | lr 9.6e-04 | grad 0.84 | 10.2k tok/s | 12.3 GFLOP/s/rank | "
            "00:14 elapsed, ETA 00:33");
}

TEST(ProgressLine, ShowsValidationLossLongRunsAndRates) {
  StepMetrics m = example();
  m.val_loss = 3.1;
  m.tokens_per_s = 2.5e6;
  m.step = 1000;
  std::string line = progress_line(m, 3000, 3725.0);
  EXPECT_NE(line.find("| loss 3.2104 | val 3.1000 |"), std::string::npos) << line;
  EXPECT_NE(line.find("| 2.50M tok/s |"), std::string::npos) << line;
  EXPECT_NE(line.find("1:02:05 elapsed, ETA 2:04:10"), std::string::npos) << line;

  m.tokens_per_s = 512;
  m.step = 3000;
  line = progress_line(m, 3000, 3725.0);
  EXPECT_NE(line.find("| 512 tok/s |"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 00:00"), std::string::npos) << line;
}

TEST(ProgressLine, ThroughputUnitFollowsItsSize) {
  StepMetrics m = example();
  const std::pair<double, const char*> cases[] = {
      {153.24, "| 153.2 TFLOP/s/rank |"}, {1.0, "| 1.0 TFLOP/s/rank |"},
      {0.5, "| 500.0 GFLOP/s/rank |"},    {0.001, "| 1.0 GFLOP/s/rank |"},
      {4.5e-5, "| 45.0 MFLOP/s/rank |"},  {0.0, "| 0.0 MFLOP/s/rank |"}};
  for (const auto& [tflops, expected] : cases) {
    m.tflops_per_gpu = tflops;
    std::string line = progress_line(m, 40, 14.0);
    EXPECT_NE(line.find(expected), std::string::npos) << tflops << ": " << line;
  }
}

TEST(ProgressLine, Fp16ShowsTheLossScaleAndTheSkippedSteps) {
  StepMetrics m = example();
  m.loss_scale = 32768;
  m.steps_skipped = 2;
  EXPECT_EQ(progress_line(m, 40, 14.0),
            "step 12/40 | loss 3.2104 | lr 9.6e-04 | grad 0.84 | loss scale 32768, 2 skipped | 10.2k tok/s | "
            "12.3 GFLOP/s/rank | 00:14 elapsed, ETA 00:33");
  m.skipped = true;
  m.steps_skipped = 3;
  m.grad_norm = -std::nan("");
  EXPECT_NE(progress_line(m, 40, 14.0).find("| grad nan | loss scale 32768 (skipped), 3 skipped |"), std::string::npos)
      << progress_line(m, 40, 14.0);
}

TEST(ProgressLine, NoEtaBeforeTheFirstStep) {
  StepMetrics m = example();
  m.step = 0;
  EXPECT_NE(progress_line(m, 40, 0.0).find("ETA --:--"), std::string::npos);
}

}  // namespace
}  // namespace ptdp
