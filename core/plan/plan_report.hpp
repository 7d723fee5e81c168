#pragma once
// What `ptdp-host plan` prints: a table of the fastest layouts with their memory and time
// breakdowns and why the best wins, or the same as one JSON document.
#include <nlohmann/json.hpp>
#include <string>

#include "plan/layout_search.hpp"

namespace ptdp {

struct PlanContext {
  std::string manifest;
  std::string cluster;  // the cluster file
  const ClusterSpec* spec = nullptr;
  PlanRequest request;
};

// The best against the given layout and against the fastest layout of another (p, t): which parts
// of the step it saves and which it pays more for.
std::string why_best_wins(const PlanResult& result);

// `top`: how many ranked candidates to list.
std::string plan_text(const PlanContext& context, const PlanResult& result, int top);

// {"given": {...}, "best": {...} or null, "candidates": [...], ...}; each candidate with pipeline,
// tensor, data, micro_batch, virtual_stages, recompute, distributed_optimizer, scatter_gather,
// fits, memory_gib {weights, gradients, optimizer_state, activations, workspace, total},
// step_time_s, step_time_breakdown_s, tflops_per_gpu.
nlohmann::json plan_json(const PlanContext& context, const PlanResult& result);

}  // namespace ptdp
