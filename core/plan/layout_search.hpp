#pragma once
// The planner: evaluates a layout (memory per GPU, step time, TFLOP/s per GPU) and searches
// every layout the manifest rules allow for a model, a global batch and a GPU count, ranked by
// predicted step time among those that fit.
#include <optional>
#include <string>
#include <vector>

#include "manifest/run_config.hpp"
#include "plan/cluster_spec.hpp"
#include "plan/memory_model.hpp"
#include "plan/pipeline_simulation.hpp"
#include "plan/plan_layout.hpp"
#include "plan/step_time_model.hpp"

namespace ptdp {

struct PlanCandidate {
  PlanLayout layout;
  int microbatches = 0;  // m = B / (b·d)
  std::string scheduler;  // the stock scheduler plugin that orders the step (none without a pipeline)
  bool fits = false;
  // false: the weights, gradients and optimizer state alone exceed the GPU's memory; activations
  // and the step time were not computed.
  bool timed = false;
  MemoryBreakdown memory;
  StepTimeBreakdown time;
  // The paper's FLOPs of a step over the step time and the GPUs, with the formula of what runs:
  // 96·B·s·l·h²·(…) with recomputation, 72·B·s·l·h²·(…) without.
  double tflops_per_gpu = 0;
};

struct PlanRequest {
  RunConfig::Model model;
  int global_batch = 1;
  int gpus = 1;
};

struct PlanResult {
  PlanCandidate given;
  std::vector<PlanCandidate> candidates;  // those that fit, fastest first, then the rest, smallest first
  const PlanCandidate* best() const { return !candidates.empty() && candidates[0].fits ? &candidates[0] : nullptr; }
};

// Why a layout is not allowed for the model, batch and GPU count (the manifest's rules between
// keys), or nothing when it is.
std::optional<std::string> layout_problem(const PlanRequest& request, const PlanLayout& layout);

PlanCandidate evaluate_layout(const PlanRequest& request, const PlanLayout& layout, const ClusterSpec& cluster,
                              PipelineSimulation& simulation);

// Every (p, t, d, b, v, recompute, distributed optimizer, scatter/gather, split backward) with
// p·t·d = gpus that layout_problem() allows, b up to `max_micro_batch`; a split backward wherever
// there is a pipeline for its weight gradients to fill the bubble of (whether a stock scheduler
// serves it is the schedulers' to say: plan_layouts() asks them).
std::vector<PlanLayout> allowed_layouts(const PlanRequest& request, int max_micro_batch = 16);

// Evaluates `given` and every allowed layout; candidates ranked as PlanResult says.
PlanResult plan_layouts(const PlanRequest& request, const PlanLayout& given, const ClusterSpec& cluster,
                        PipelineSimulation& simulation);

// Ranks candidates: fitting ones by step time, then the rest by memory.
void rank_candidates(std::vector<PlanCandidate>& candidates);

}  // namespace ptdp
