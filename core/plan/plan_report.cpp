#include "plan/plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "manifest/model_math.hpp"
#include "plan/memory_model.hpp"

namespace ptdp {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The parts of a step, by name, in the order the breakdown lists them.
std::vector<std::pair<const char*, double>> parts(const StepTimeBreakdown& t) {
  return {{"compute", t.compute},          {"tensor all-reduces", t.tensor_parallel},
          {"bubble", t.bubble},            {"pipeline transfers", t.pipeline_transfers},
          {"data-parallel reduction", t.data_parallel}, {"optimizer", t.optimizer}};
}

// "saves 0.31 s of bubble and 0.05 s of tensor all-reduces; pays 0.02 s more pipeline transfers".
std::string difference(const PlanCandidate& best, const PlanCandidate& other) {
  std::vector<std::pair<double, const char*>> saved, paid;
  const auto a = parts(best.time), b = parts(other.time);
  for (size_t i = 0; i < a.size(); ++i) {
    const double delta = b[i].second - a[i].second;
    if (std::abs(delta) < 0.005 * other.time.total()) continue;  // under half a percent: not a reason
    (delta > 0 ? saved : paid).emplace_back(std::abs(delta), a[i].first);
  }
  auto list = [](std::vector<std::pair<double, const char*>> items) {
    std::sort(items.rbegin(), items.rend());
    std::string text;
    for (size_t i = 0; i < items.size(); ++i)
      text += fmt::format("{}{:.3g} s of {}", i == 0 ? "" : i + 1 == items.size() ? " and " : ", ", items[i].first,
                          items[i].second);
    return text;
  };
  std::string text = saved.empty() ? "saves nothing measurable" : "saves " + list(saved);
  if (!paid.empty()) text += "; pays " + list(paid) + " more";
  return text;
}

std::string gib(double bytes) { return fmt::format("{:.1f}", bytes / kGiB); }

nlohmann::json candidate_json(const PlanCandidate& c) {
  const PlanLayout& l = c.layout;
  nlohmann::json j = {{"pipeline", l.pipeline},
                      {"tensor", l.tensor},
                      {"data", l.data},
                      {"micro_batch", l.micro_batch},
                      {"virtual_stages", l.virtual_stages},
                      {"scheduler", c.scheduler.empty() ? nlohmann::json() : nlohmann::json(c.scheduler)},
                      {"split_backward", l.split_backward},
                      {"microbatches", c.microbatches},
                      {"recompute", recompute_name(l)},
                      {"sequence_parallel", l.sequence_parallel},
                      {"distributed_optimizer", l.distributed_optimizer},
                      {"scatter_gather", l.scatter_gather},
                      {"fits", c.fits},
                      {"memory_gib",
                       {{"weights", c.memory.weights / kGiB},
                        {"gradients", c.memory.gradients / kGiB},
                        {"optimizer_state", c.memory.optimizer_state / kGiB},
                        {"activations", c.timed ? nlohmann::json(c.memory.activations / kGiB) : nlohmann::json()},
                        {"workspace", c.memory.workspace / kGiB},
                        {"total", c.memory.total() / kGiB},
                        {"stage", c.memory.stage}}},
                      {"step_time_s", nullptr},
                      {"step_time_breakdown_s", nullptr},
                      {"tflops_per_gpu", nullptr}};
  if (c.timed) {
    j["step_time_s"] = c.time.total();
    nlohmann::json breakdown = nlohmann::json::object();
    for (const auto& [name, seconds] : parts(c.time)) breakdown[name] = seconds;
    j["step_time_breakdown_s"] = std::move(breakdown);
    j["tflops_per_gpu"] = c.tflops_per_gpu;
  }
  return j;
}

const PlanCandidate* fastest_other_shape(const PlanResult& result) {
  const PlanCandidate* best = result.best();
  for (const PlanCandidate& c : result.candidates)
    if (c.fits && (c.layout.pipeline != best->layout.pipeline || c.layout.tensor != best->layout.tensor)) return &c;
  return nullptr;
}

// What a layout marked dist-opt sets, in the manifest's words.
constexpr const char* kDistributedOptimizerNote =
    "dist-opt is parallel.distributed_optimizer = true: fp32 master weights and Adam moments sharded over d, "
    "gradients reduce-scattered and the updated master weights all-gathered beside the next step's forward";

}  // namespace

std::string why_best_wins(const PlanResult& result) {
  const PlanCandidate* best = result.best();
  if (!best) {
    if (result.candidates.empty()) return "no layout is allowed by the manifest rules";
    const PlanCandidate& smallest = result.candidates.front();  // the rest are ranked by memory
    return fmt::format("no layout fits in the GPU's memory: the smallest, {}, needs {}{} GiB per GPU",
                       layout_label(smallest.layout), smallest.timed ? "" : "at least ", gib(smallest.memory.total()));
  }
  std::string text;
  if (result.given.layout == best->layout) {
    text = "the given layout is the fastest that fits";
  } else if (!result.given.fits) {
    text = fmt::format("the given layout does not fit ({} GiB per GPU)", gib(result.given.memory.total()));
  } else {
    text = fmt::format("against the given layout ({:.3g} s) it {}", result.given.time.total(),
                       difference(*best, result.given));
  }
  if (const PlanCandidate* other = fastest_other_shape(result))
    text += fmt::format("; against the fastest with another (p, t), {} ({:.3g} s), it {}", layout_label(other->layout),
                        other->time.total(), difference(*best, *other));
  return text;
}

std::string plan_text(const PlanContext& context, const PlanResult& result, int top) {
  const PlanRequest& r = context.request;
  std::string out = fmt::format(
      "plan for {} on {} ({}): {} GPUs, {} per node, {:.1f} GiB each\n"
      "model: {} layers, hidden {}, {} heads, seq_len {}, vocab {}: {:.2f}B parameters; global batch {}\n",
      context.manifest, context.cluster, context.spec->name, r.gpus, context.spec->gpus_per_node,
      context.spec->memory_bytes / kGiB, r.model.layers, r.model.hidden, r.model.heads, r.model.seq_len, r.model.vocab,
      static_cast<double>(parameter_count(r.model)) / 1e9, r.global_batch);
  out += fmt::format("{:<5} {:<44} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "rank", "layout", "fits",
                     "GiB/GPU", "step s", "compute", "TP", "bubble", "p2p", "TFLOP/s");
  auto row = [&](const std::string& rank, const PlanCandidate& c) {
    if (!c.timed) {
      out += fmt::format("{:<5} {:<44} {:>4} {:>8} (the model state alone does not fit)\n", rank,
                         layout_label(c.layout), "no", gib(c.memory.total()));
      return;
    }
    out += fmt::format("{:<5} {:<44} {:>4} {:>8} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.1f}\n", rank,
                       layout_label(c.layout), c.fits ? "yes" : "no", gib(c.memory.total()), c.time.total(),
                       c.time.compute, c.time.tensor_parallel, c.time.bubble, c.time.pipeline_transfers,
                       c.tflops_per_gpu);
  };
  row("given", result.given);
  {
    // The given layout's model state both ways, whatever the manifest chose.
    PlanLayout without = result.given.layout, with = result.given.layout;
    without.distributed_optimizer = false;
    with.distributed_optimizer = true;
    const MemoryBreakdown a = memory_per_gpu(r.model, without, *context.spec, {});
    const MemoryBreakdown b = memory_per_gpu(r.model, with, *context.spec, {});
    out += fmt::format("      given, per GPU of stage {}: weights {} + gradients {} GiB, optimizer state {} GiB without the "
                       "distributed optimizer, {} GiB with it\n",
                       a.stage, gib(a.weights), gib(a.gradients), gib(a.optimizer_state), gib(b.optimizer_state));
  }
  const int shown = std::min<int>(top, static_cast<int>(result.candidates.size()));
  for (int i = 0; i < shown; ++i) row(std::to_string(i + 1), result.candidates[i]);
  int fitting = 0;
  for (const PlanCandidate& c : result.candidates) fitting += c.fits ? 1 : 0;
  out += fmt::format("{} layouts allowed by the manifest rules, {} fit\n", result.candidates.size(), fitting);
  if (const PlanCandidate* best = result.best()) {
    const MemoryBreakdown& m = best->memory;
    out += fmt::format("best: {} — {:.3f} s per step, {:.1f} TFLOP/s per GPU ({} formula)\n", layout_label(best->layout),
                       best->time.total(), best->tflops_per_gpu,
                       best->layout.recompute                                        ? "96"
                       : best->layout.recomputes(RecomputeModule::CoreAttention) ? "selective 72"
                                                                                     : "72");
    out += fmt::format("  memory per GPU (stage {}): weights {} + gradients {} + optimizer state {} + activations {} + "
                       "workspace {} = {} GiB\n",
                       m.stage, gib(m.weights), gib(m.gradients), gib(m.optimizer_state), gib(m.activations),
                       gib(m.workspace), gib(m.total()));
    std::string breakdown;
    for (const auto& [name, seconds] : parts(best->time)) breakdown += fmt::format(", {} {:.3g}", name, seconds);
    out += fmt::format("  step time (s): {}\n", breakdown.substr(2));
    if (best->layout.distributed_optimizer) out += std::string("  note: ") + kDistributedOptimizerNote + "\n";
  }
  out += "why: " + why_best_wins(result) + "\n";
  return out;
}

nlohmann::json plan_json(const PlanContext& context, const PlanResult& result) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const PlanCandidate& c : result.candidates) candidates.push_back(candidate_json(c));
  const PlanCandidate* best = result.best();
  return {{"manifest", context.manifest},
          {"cluster", context.cluster},
          {"gpus", context.request.gpus},
          {"global_batch", context.request.global_batch},
          {"given", candidate_json(result.given)},
          {"best", best ? candidate_json(*best) : nlohmann::json()},
          {"why", why_best_wins(result)},
          {"notes", {kDistributedOptimizerNote}},
          {"candidates", std::move(candidates)}};
}

}  // namespace ptdp
