#include "plan/activation_choices.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plan/memory_model.hpp"

namespace ptdp {

PlanLayout plan_layout_of(const RunConfig& c) {
  const auto& p = c.parallel;
  PlanLayout l{p.pipeline, p.tensor, p.data, p.micro_batch, p.virtual_stages, p.full_recompute(), p.distributed_optimizer,
               p.scatter_gather, p.sequence_parallel, 0};
  if (p.selective_recompute())
    for (const std::string& module : p.recompute_modules) l.recompute_modules |= recompute_module_bit(module);
  return l;
}

std::vector<ActivationChoice> activation_choices(const RunConfig& config, bool scores_in_memory) {
  const PlanLayout own = plan_layout_of(config);
  std::vector<PlanLayout> kinds;
  for (bool sp : {false, true}) {
    if (sp && config.parallel.tensor == 1) continue;
    PlanLayout l = own;
    l.sequence_parallel = sp;
    l.recompute = false;
    l.recompute_modules = 0;
    kinds.push_back(l);
    l.recompute_modules = module_bit(RecomputeModule::CoreAttention);
    kinds.push_back(l);
    if (own.selective() && own.recompute_modules != l.recompute_modules) {
      l.recompute_modules = own.recompute_modules;
      kinds.push_back(l);
    }
    l.recompute_modules = 0;
    l.recompute = true;
    kinds.push_back(l);
  }
  std::vector<ActivationChoice> choices;
  for (const PlanLayout& l : kinds) {
    ActivationChoice c;
    c.layout = l;
    c.name = recompute_name(l) + (l.sequence_parallel ? " + sp" : "");
    c.this_run = l == own;
    c.layer_bytes = l.recompute ? layer_input_bytes(config.model, l) : layer_activation_bytes(config.model, l, scores_in_memory);
    choices.push_back(c);
  }
  return choices;
}

nlohmann::ordered_json activation_choices_json(const RunConfig& config, const std::vector<int>& peak_activations) {
  nlohmann::ordered_json bytes = nlohmann::ordered_json::object(), stages = nlohmann::ordered_json::object(),
                         flash_stages = nlohmann::ordered_json::object();
  std::string this_run;
  const int last = static_cast<int>(peak_activations.size()) - 1;
  for (const ActivationChoice& c : activation_choices(config, true)) {
    bytes[c.name] = c.layer_bytes;
    nlohmann::ordered_json per_stage = nlohmann::ordered_json::array(), flash = nlohmann::ordered_json::array();
    for (int stage = 0; stage <= last; ++stage) {
      per_stage.push_back(
          stage_activation_bytes(config.model, c.layout, true, peak_activations[stage], stage == last));
      flash.push_back(stage_activation_bytes(config.model, c.layout, false, peak_activations[stage], stage == last));
    }
    stages[c.name] = std::move(per_stage);
    flash_stages[c.name] = std::move(flash);
    if (c.this_run) this_run = c.name;
  }
  return {{"formula", "Korthikanti et al. 2022, section 4: 16-bit activations of one layer and microbatch"},
          {"attention_scores", "in memory in layer_bytes and stage_bytes; stage_bytes_flash_attention keeps none"},
          {"layer_bytes", bytes},
          {"stage_bytes", stages},
          {"stage_bytes_flash_attention", flash_stages},
          {"this_run", this_run}};
}

std::string activation_choices_text(const RunConfig& config, const std::vector<int>& peak_activations) {
  const int last = config.parallel.pipeline - 1;
  std::vector<std::string> parts;
  for (const ActivationChoice& c : activation_choices(config, true)) {
    double busiest = 0;
    for (int stage : {0, last})
      busiest = std::max(busiest, stage_activation_bytes(config.model, c.layout, true, peak_activations.at(stage),
                                                         stage == last));
    parts.push_back(fmt::format("{}{} {:.3g} MiB", c.this_run ? "*" : "", c.name, busiest / (1024.0 * 1024.0)));
  }
  return fmt::format("per GPU of the busiest end stage, 16-bit, attention scores kept (docs/memory.md; * this run): {}",
                     fmt::join(parts, ", "));
}

}  // namespace ptdp
