#include "ab/ab_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ab/step_time_statistics.hpp"

namespace ptdp {

namespace {

std::vector<double> field_after_warmup(const std::vector<ArmRound>& rounds, int warmup, double StepMetrics::*field) {
  std::vector<double> values;
  for (const auto& round : rounds)
    for (const auto& step : round.steps)
      if (step.step > warmup) values.push_back(step.*field);
  return values;
}

std::string precision_of(const ArmSummary& arm) {
  if (!arm.header) return "fp32";
  return arm.header->settings.value("precision", nlohmann::json::object()).value("params", "fp32");
}

void summarise(ArmSummary& arm, int warmup) {
  arm.median_step_s = median(field_after_warmup(arm.rounds, warmup, &StepMetrics::step_time_s));
  arm.tokens_per_s = median(field_after_warmup(arm.rounds, warmup, &StepMetrics::tokens_per_s));
  arm.tflops_per_gpu = median(field_after_warmup(arm.rounds, warmup, &StepMetrics::tflops_per_gpu));
  for (const auto& round : arm.rounds)
    if (round.peak_rss_bytes)
      arm.peak_memory_gib = std::max(arm.peak_memory_gib.value_or(0), *round.peak_rss_bytes / (1024.0 * 1024 * 1024));
  for (const auto& round : arm.rounds)
    arm.rounds_loss_max_rel_diff = std::max(
        arm.rounds_loss_max_rel_diff, compare_losses(arm.rounds.front().steps, round.steps, 0).max_rel_diff);
}

std::string key_list(const std::vector<SettingDifference>& differences, bool training) {
  std::string keys;
  for (const auto& d : differences)
    if (d.changes_training == training) keys += (keys.empty() ? "" : ", ") + d.key;
  return keys;
}

std::string loss_statement(const Comparison& c) {
  const std::string measured = fmt::format("max relative loss difference {:.2e} at step {}", c.losses.max_rel_diff,
                                           c.losses.worst_step);
  if (!c.same_training)
    return fmt::format("The arms train different things ({}): their losses are not expected to agree ({}).",
                       key_list(c.differences, true), measured);
  if (c.rounding_differs) {
    std::string formats;
    for (const auto& d : c.differences)
      if (d.changes_rounding) formats += (formats.empty() ? "" : ", ") + d.key;
    return fmt::format("The arms train the same model in other number formats ({}): their losses differ by design, so "
                       "they are measured, not judged: relative gap {:.2e} on average, {:.2e} at the last step, "
                       "largest {:.2e} at step {}.",
                       formats, c.losses.mean_rel_diff, c.losses.last_rel_diff, c.losses.max_rel_diff,
                       c.losses.worst_step);
  }
  const std::string how = key_list(c.differences, false);
  const std::string what = how.empty() ? "The arms run the same settings" : "Only how the model is trained differs (" + how + ")";
  if (c.losses.equivalent)
    return fmt::format("{}: the losses must agree, and they do ({} <= tolerance {:.0e}).", what, measured,
                       c.loss_tolerance);
  return fmt::format("{}: the losses must agree, and they do NOT ({} > tolerance {:.0e}): one arm computes "
                     "something else.",
                     what, measured, c.loss_tolerance);
}

std::string verdict_of(const Comparison& c, const AbMethod& method) {
  const bool interval_excludes_one = c.ci_low > 1 || c.ci_high < 1;
  if (c.p_value < method.alpha && interval_excludes_one && std::abs(c.ratio - 1) >= method.min_effect)
    return c.ratio > 1 ? "slower" : "faster";
  return "no significant difference";
}

}  // namespace

std::vector<std::vector<double>> step_time_samples(const std::vector<ArmRound>& rounds, int warmup) {
  std::vector<std::vector<double>> samples;
  for (const auto& round : rounds) samples.push_back(field_after_warmup({round}, warmup, &StepMetrics::step_time_s));
  return samples;
}

AbAnalysis analyse_ab(std::vector<ArmSummary> arms, const AbMethod& method) {
  AbAnalysis analysis;
  for (auto& arm : arms) summarise(arm, method.warmup);
  const ArmSummary& base = arms.front();
  const auto base_samples = step_time_samples(base.rounds, method.warmup);
  for (size_t i = 1; i < arms.size(); ++i) {
    const ArmSummary& arm = arms[i];
    const auto samples = step_time_samples(arm.rounds, method.warmup);
    Comparison c;
    c.baseline = base.arm.name;
    c.arm = arm.arm.name;
    c.ratio = arm.median_step_s / base.median_step_s;
    const RatioInterval interval =
        bootstrap_ratio_of_medians(base_samples, samples, method.confidence, method.resamples, method.seed);
    c.ci_low = interval.low;
    c.ci_high = interval.high;
    c.p_value = mann_whitney_p_value(pooled(base_samples), pooled(samples));
    c.verdict = verdict_of(c, method);
    const bool bf16 = precision_of(base) == "bf16" || precision_of(arm) == "bf16";
    c.loss_tolerance = method.loss_tolerance.value_or(bf16 ? 2e-2 : 1e-4);
    c.losses = compare_losses(base.rounds.front().steps, arm.rounds.front().steps, c.loss_tolerance);
    if (base.header && arm.header) c.differences = setting_differences(base.header->settings, arm.header->settings);
    c.same_training = std::none_of(c.differences.begin(), c.differences.end(),
                                   [](const SettingDifference& d) { return d.changes_training; });
    c.rounding_differs = c.same_training && std::any_of(c.differences.begin(), c.differences.end(),
                                                        [](const SettingDifference& d) { return d.changes_rounding; });
    c.statement = loss_statement(c);
    analysis.comparisons.push_back(std::move(c));
  }
  analysis.arms = std::move(arms);
  return analysis;
}

}  // namespace ptdp
