#pragma once
// The statistics of an A/B comparison of step times. Samples come in rounds (one job of an arm
// each), and steps of one job share that job's conditions (its memory placement, the machine's
// load while it ran), so the confidence interval resamples rounds before steps: a difference
// that one unlucky round explains does not look certain.
#include <cstdint>
#include <vector>

namespace ptdp {

// Step times of one arm, one vector per round (warm-up steps already dropped).
using RoundSamples = std::vector<std::vector<double>>;

std::vector<double> pooled(const RoundSamples& rounds);

// Middle value (mean of the two middle ones for an even count); NaN when empty.
double median(std::vector<double> values);

// The q-quantile (0..1) of non-empty sorted values, interpolating between neighbours.
double quantile(const std::vector<double>& sorted, double q);

struct RatioInterval {
  double low = 0, high = 0;
};

// Percentile bootstrap interval of median(arm) / median(baseline): each of `resamples` draws
// picks rounds with replacement, then steps with replacement within each picked round, for both
// arms independently. The generator is seeded with `seed`, so a report can be reproduced
// exactly from its samples.
RatioInterval bootstrap_ratio_of_medians(const RoundSamples& baseline, const RoundSamples& arm,
                                         double confidence, int resamples, uint64_t seed);

// Two-sided p-value of the Mann-Whitney U test that the two samples come from one distribution:
// the normal approximation with tie correction and continuity correction, accurate from about
// ten samples per side. 1 when every value is equal (no evidence of a difference).
double mann_whitney_p_value(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace ptdp
