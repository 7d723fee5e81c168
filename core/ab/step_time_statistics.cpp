#include "ab/step_time_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

namespace ptdp {

std::vector<double> pooled(const RoundSamples& rounds) {
  std::vector<double> all;
  for (const auto& round : rounds) all.insert(all.end(), round.begin(), round.end());
  return all;
}

double median(std::vector<double> values) {
  if (values.empty()) return NAN;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

namespace {

// mt19937_64's output is fixed by the standard; the standard distributions are not, so indices
// are drawn by plain modulo (its bias is below 1e-15 for any realistic sample count).
size_t draw_index(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

double resampled_median(const RoundSamples& rounds, std::mt19937_64& rng, std::vector<double>& scratch) {
  scratch.clear();
  for (size_t r = 0; r < rounds.size(); ++r) {
    const auto& round = rounds[draw_index(rng, rounds.size())];
    for (size_t s = 0; s < round.size(); ++s) scratch.push_back(round[draw_index(rng, round.size())]);
  }
  return median(scratch);
}

}  // namespace

double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

RatioInterval bootstrap_ratio_of_medians(const RoundSamples& baseline, const RoundSamples& arm,
                                         double confidence, int resamples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> ratios, scratch;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double base = resampled_median(baseline, rng, scratch);
    ratios.push_back(resampled_median(arm, rng, scratch) / base);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  return {quantile(ratios, tail), quantile(ratios, 1 - tail)};
}

double mann_whitney_p_value(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1.0;
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size()), n = n1 + n2;
  std::vector<std::pair<double, bool>> all;  // value, from a
  for (double x : a) all.emplace_back(x, true);
  for (double x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  // Tied values share the mean of their ranks; each group of t ties shrinks the variance.
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i), mean_rank = (static_cast<double>(i + j) + 1) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_a += mean_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(variance > 0)) return 1.0;
  const double z = std::max(0.0, std::abs(u - n1 * n2 / 2) - 0.5) / std::sqrt(variance);
  return std::erfc(z / std::sqrt(2.0));
}

}  // namespace ptdp
