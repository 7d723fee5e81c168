#include "ab/ab_report.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// JSON has no NaN or infinity; an undefined number is null.
nlohmann::ordered_json number(double value) { return std::isfinite(value) ? nlohmann::ordered_json(value) : nullptr; }

nlohmann::ordered_json arm_json(const ArmSummary& a, int warmup) {
  nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
  for (const auto& r : a.rounds) {
    nlohmann::ordered_json times = nlohmann::ordered_json::array(), losses = nlohmann::ordered_json::array();
    for (const auto& s : r.steps) {
      if (s.step > warmup) times.push_back(s.step_time_s);
      losses.push_back(number(s.loss));
    }
    rounds.push_back({{"round", r.round},
                      {"position", r.position},
                      {"wall_s", r.wall_s},
                      {"peak_rss_gib", r.peak_rss_bytes ? number(*r.peak_rss_bytes / (1024.0 * 1024 * 1024)) : nullptr},
                      {"step_time_s", times},
                      {"loss", losses}});
  }
  return {{"name", a.arm.name},
          {"manifest", a.arm.manifest},
          {"sets", a.arm.sets},
          {"median_step_s", number(a.median_step_s)},
          {"tokens_per_s", number(a.tokens_per_s)},
          {"tflops_per_gpu", number(a.tflops_per_gpu)},
          {"peak_memory_gib", a.peak_memory_gib ? number(*a.peak_memory_gib) : nullptr},
          {"rounds_loss_max_rel_diff", number(a.rounds_loss_max_rel_diff)},
          {"header", a.header ? nlohmann::ordered_json(run_header_json(*a.header)) : nullptr},
          {"rounds", rounds}};
}

nlohmann::ordered_json comparison_json(const Comparison& c) {
  nlohmann::ordered_json differences = nlohmann::ordered_json::array();
  for (const auto& d : c.differences)
    differences.push_back(
        {{"key", d.key}, {"baseline", d.baseline}, {"arm", d.arm}, {"changes_training", d.changes_training},
         {"changes_rounding", d.changes_rounding}});
  return {{"baseline", c.baseline},
          {"arm", c.arm},
          {"ratio", number(c.ratio)},
          {"ci_low", number(c.ci_low)},
          {"ci_high", number(c.ci_high)},
          {"p_value", number(c.p_value)},
          {"verdict", c.verdict},
          {"loss_max_rel_diff", number(c.losses.max_rel_diff)},
          {"loss_worst_step", c.losses.worst_step},
          {"loss_tolerance", c.loss_tolerance},
          {"losses_equivalent", c.losses.equivalent},
          {"losses_differ_by_design", c.rounding_differs},
          {"loss_mean_rel_diff", number(c.losses.mean_rel_diff)},
          {"loss_last_rel_diff", number(c.losses.last_rel_diff)},
          {"same_training", c.same_training},
          {"loss_statement", c.statement},
          {"setting_differences", differences}};
}

std::string memory_cell(const std::optional<double>& gib) {
  return gib ? fmt::format("{:.3f}", *gib) : "not measured";
}

}  // namespace

nlohmann::ordered_json ab_report_json(const AbAnalysis& analysis, const AbMethod& method, const AbContext& context) {
  nlohmann::ordered_json arms = nlohmann::ordered_json::array(), comparisons = nlohmann::ordered_json::array();
  for (const auto& a : analysis.arms) arms.push_back(arm_json(a, method.warmup));
  for (const auto& c : analysis.comparisons) comparisons.push_back(comparison_json(c));
  return {{"command", context.command},
          {"date", context.date},
          {"launcher", context.launcher},
          {"method",
           {{"rounds", method.rounds},
            {"steps", context.steps},
            {"warmup", method.warmup},
            {"order", context.order},
            {"confidence", method.confidence},
            {"bootstrap_resamples", method.resamples},
            {"bootstrap_seed", method.seed},
            {"alpha", method.alpha},
            {"min_effect", method.min_effect},
            {"peak_memory", "largest resident set (RSS) of any process of a job, from wait4; null under --launcher"},
            {"verdict_rule", "faster or slower when p_value < alpha, the interval excludes 1 and |ratio - 1| >= "
                             "min_effect; otherwise no significant difference"}}},
          {"arms", arms},
          {"comparisons", comparisons}};
}

std::string ab_report_markdown(const AbAnalysis& analysis, const AbMethod& method, const AbContext& context) {
  std::string md = "# A/B report\n\n";
  md += fmt::format("`{}`\n\n{} · {} rounds, counterbalanced · {} warm-up steps dropped per job · {}\n\n", context.command,
                    context.date, method.rounds, method.warmup,
                    context.launcher.empty() ? "local jobs" : "launcher `" + context.launcher + "`");
  md += "| arm | median step (ms) | tokens/s | TFLOP/s per GPU | peak RSS (GiB) | samples |\n";
  md += "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& a : analysis.arms) {
    size_t samples = 0;
    for (const auto& r : step_time_samples(a.rounds, method.warmup)) samples += r.size();
    md += fmt::format("| {} | {:.2f} | {:.0f} | {:.4g} | {} | {} |\n", a.arm.name, a.median_step_s * 1e3, a.tokens_per_s,
                      a.tflops_per_gpu, memory_cell(a.peak_memory_gib), samples);
  }
  md += fmt::format("\n| arm vs {} | time ratio | {:.0f}% interval | p (Mann–Whitney) | verdict | max loss rel. diff | "
                    "losses equivalent |\n|---|---:|---|---:|---|---:|---|\n",
                    analysis.arms.front().arm.name, method.confidence * 100);
  for (const auto& c : analysis.comparisons)
    md += fmt::format("| {} | {:.3f} | [{:.3f}, {:.3f}] | {:.2g} | {} | {:.2e} | {} |\n", c.arm, c.ratio, c.ci_low,
                      c.ci_high, c.p_value, c.verdict, c.losses.max_rel_diff,
                      c.rounding_differs ? "differ by design" : c.losses.equivalent ? "yes" : "no");
  md += "\n";
  for (const auto& c : analysis.comparisons) md += fmt::format("- **{}**: {}\n", c.arm, c.statement);
  for (const auto& a : analysis.arms)
    if (a.rounds_loss_max_rel_diff > 0)
      md += fmt::format("- **{}**: its rounds' losses differ (max relative difference {:.2e}): its training is not "
                        "deterministic.\n",
                        a.arm.name, a.rounds_loss_max_rel_diff);
  md += fmt::format(
      "\nRatio: the arm's median step time over {}'s (below 1 is faster). Interval: percentile bootstrap, rounds then "
      "steps resampled ({} draws, seed {}). Verdict: faster or slower when p < {}, the interval excludes 1 and the "
      "ratio differs from 1 by at least {:.0f}%. Peak RSS: the largest process of a job (host memory, not device "
      "memory).\n",
      analysis.arms.front().arm.name, method.resamples, method.seed, method.alpha, method.min_effect * 100);
  if (!context.schedule_pictures.empty()) {
    md += "\nSchedules, as each arm's scheduler makes them for its layout, simulated with uniform op times and "
          "transfers posted ahead:";
    for (const std::string& picture : context.schedule_pictures) md += fmt::format(" [{0}]({0})", picture);
    md += "\n";
  }
  return md;
}

void write_report_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush())
    throw Error(path + ": cannot write the report: " + std::strerror(errno));
}

}  // namespace ptdp
