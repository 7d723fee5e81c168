#pragma once
// The activation memory of a manifest's layout under each way of keeping activations: no,
// selective (the paper's: core_attention, and the manifest's own modules) and full recomputation,
// with and without sequence parallelism (Korthikanti et al., arXiv 2205.05198; docs/memory.md).
// `validate` prints it for the busiest end stage, the metrics header records it per layer.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"
#include "plan/plan_layout.hpp"

namespace ptdp {

// The planner's layout of what the manifest runs.
PlanLayout plan_layout_of(const RunConfig& config);

struct ActivationChoice {
  PlanLayout layout;
  std::string name;      // "none", "selective(core_attention)", "full", with " + sp"
  bool this_run = false;  // the manifest's own choice
  double layer_bytes = 0;  // one layer's saved activations for one microbatch (16-bit)
};

// Every choice the layout allows (sequence parallelism only with t > 1), the manifest's marked.
// scores_in_memory: the attention scores kept in memory (the paper's kernels), or not (flash).
std::vector<ActivationChoice> activation_choices(const RunConfig& config, bool scores_in_memory);

// {"formula": ..., "attention_scores": "in memory", "layer_bytes": {name: bytes, ...},
//  "stage_bytes": {name: [bytes of stage 0, 1, ...], ...}, "stage_bytes_flash_attention": the same
//  without the attention scores (kernels that run flash attention), "this_run": name}; peak_activations: the
// microbatch-chunks each stage keeps at its peak (the schedule verifier's), one per stage.
nlohmann::ordered_json activation_choices_json(const RunConfig& config, const std::vector<int>& peak_activations);

// One line for `validate`: each choice's activations on the busiest end stage, given the
// schedule's peak microbatch-chunks in flight per stage.
std::string activation_choices_text(const RunConfig& config, const std::vector<int>& peak_activations);

}  // namespace ptdp
