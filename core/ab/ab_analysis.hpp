#pragma once
// From the raw results of an A/B (each arm's metrics logs, one per round) to its numbers: per
// arm the medians, per comparison with the first arm the ratio, its interval, the test, the
// verdict and whether the arms trained the same model.
#include <optional>
#include <string>
#include <vector>

#include "ab/ab_arm.hpp"
#include "ab/loss_parity.hpp"
#include "ab/setting_differences.hpp"
#include "metrics/run_header.hpp"
#include "metrics/step_metrics.hpp"

namespace ptdp {

// How an A/B was run and judged.
struct AbMethod {
  int rounds = 5;
  int warmup = 3;              // leading steps of every job that are not samples
  double confidence = 0.95;    // of the bootstrap interval
  int resamples = 2000;        // bootstrap draws
  uint64_t seed = 20260101;    // of the bootstrap generator
  double alpha = 0.05;         // p-value below which a difference can be called
  double min_effect = 0.01;    // |ratio - 1| below this is called no difference, however certain
  std::optional<double> loss_tolerance;  // empty: 1e-4 for fp32 arms, 2e-2 where one is bf16
};

struct ArmRound {
  int round = 0;     // 1-based
  int position = 0;  // 1-based place of the arm within its round
  std::vector<StepMetrics> steps;
  double wall_s = 0;
  std::optional<double> peak_rss_bytes;
};

struct ArmSummary {
  AbArm arm;
  std::optional<RunHeader> header;  // of the first round's log
  std::vector<ArmRound> rounds;
  double median_step_s = 0, tokens_per_s = 0, tflops_per_gpu = 0;
  std::optional<double> peak_memory_gib;
  double rounds_loss_max_rel_diff = 0;  // between this arm's rounds: 0 when training is deterministic
};

struct Comparison {
  std::string baseline, arm;
  double ratio = 0, ci_low = 0, ci_high = 0, p_value = 1;
  std::string verdict;  // "faster", "slower", "no significant difference"
  LossParity losses;
  double loss_tolerance = 0;
  std::vector<SettingDifference> differences;
  bool same_training = true;  // no difference changes what is trained
  bool rounding_differs = false;  // same_training, but in other number formats: losses differ by design
  std::string statement;      // the loss-parity finding in words
};

struct AbAnalysis {
  std::vector<ArmSummary> arms;
  std::vector<Comparison> comparisons;  // every arm after the first against the first
};

// Step times after the warm-up steps, one vector per round.
std::vector<std::vector<double>> step_time_samples(const std::vector<ArmRound>& rounds, int warmup);

// `arms` carry their rounds; the derived fields are filled in here.
AbAnalysis analyse_ab(std::vector<ArmSummary> arms, const AbMethod& method);

}  // namespace ptdp
