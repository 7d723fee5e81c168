#include "plan/layout_search.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "manifest/manifest_loader.hpp"
#include "manifest/manifest_locator.hpp"
#include "manifest/manifest_rules.hpp"
#include "manifest/model_math.hpp"

namespace ptdp {

std::optional<std::string> layout_problem(const PlanRequest& r, const PlanLayout& l) {
  if (l.gpus() != r.gpus) return fmt::format("p·t·d = {} is not the {} GPUs", l.gpus(), r.gpus);
  if (l.distributed_optimizer && l.data == 1) return std::string("the distributed optimizer needs data > 1");
  // The manifest's own rules between keys, on the manifest this layout would be.
  RunConfig config;
  config.model = r.model;
  config.parallel.pipeline = l.pipeline, config.parallel.tensor = l.tensor, config.parallel.data = l.data;
  config.parallel.micro_batch = l.micro_batch, config.parallel.virtual_stages = l.virtual_stages;
  config.parallel.global_batch = r.global_batch;
  config.parallel.recompute = l.recompute ? "full" : l.selective() ? "selective" : "none";
  config.parallel.sequence_parallel = l.sequence_parallel;
  config.launch.nproc_per_node = r.gpus;
  static const toml::table no_file;
  try {
    apply_manifest_rules(config, ManifestLocator(layout_label(l), no_file));
  } catch (const ManifestError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

PlanCandidate evaluate_layout(const PlanRequest& r, const PlanLayout& l, const ClusterSpec& cluster,
                              PipelineSimulation& simulation) {
  PlanCandidate c;
  c.layout = l;
  c.microbatches = r.global_batch / (l.micro_batch * l.data);
  const ScheduleShape shape{l.pipeline, l.virtual_stages, c.microbatches};
  if (l.pipeline > 1) c.scheduler = simulation.scheduler_name(shape, l.split_backward).value_or("");
  c.memory = memory_per_gpu(r.model, l, cluster, simulation.peak_activations(shape, l.split_backward));
  c.fits = c.memory.total() <= cluster.memory_bytes;
  c.timed = true;
  c.time = step_time(r.model, r.global_batch, l, cluster, simulation);
  const double flops = l.recomputes(RecomputeModule::CoreAttention)
                           ? flops_per_step_recomputing_attention(r.model, r.global_batch)
                           : flops_per_step(r.model, r.global_batch, l.recompute);
  c.tflops_per_gpu = flops / c.time.total() / l.gpus() / 1e12;
  return c;
}

std::vector<PlanLayout> allowed_layouts(const PlanRequest& r, int max_micro_batch) {
  std::vector<PlanLayout> layouts;
  for (int p = 1; p <= r.gpus; ++p) {
    if (r.gpus % p != 0 || r.model.layers % p != 0) continue;
    for (int t = 1; t <= r.gpus / p; ++t) {
      if ((r.gpus / p) % t != 0) continue;
      const int d = r.gpus / (p * t);
      for (int b = 1; b <= max_micro_batch; ++b)
        for (int v = 1; v <= r.model.layers / p; ++v) {
          // Recomputation, the optimizer and scatter/gather change no rule: check the rest once.
          if (layout_problem(r, {p, t, d, b, v, false, false, false})) continue;
          // No recomputation; the paper's selective one (core_attention), or every module (what
          // selective recomputation saves under flash attention, which keeps no scores); full.
          // Sequence parallelism wherever there is a tensor group to split the sequence over.
          uint32_t every_module = 0;
          for (const auto& module : kRecomputeModules) every_module |= module_bit(module.module);
          struct Recompute {
            bool full;
            uint32_t modules;
          };
          for (const Recompute recompute : {Recompute{false, 0}, Recompute{false, module_bit(RecomputeModule::CoreAttention)},
                                            Recompute{false, every_module}, Recompute{true, 0}})
            for (bool sp : {false, true})
              for (bool sharded : {false, true})
                for (bool sg : {false, true})
                  for (bool split : {false, true}) {
                    if ((sharded && d == 1) || (sg && (p == 1 || t == 1))) continue;  // nothing to shard or scatter
                    if (sp && (t == 1 || r.model.seq_len % t != 0)) continue;      // no sequence to split
                    if (split && p == 1) continue;                                  // no bubble to fill
                    layouts.push_back({p, t, d, b, v, recompute.full, sharded, sg, sp, recompute.modules, split});
                  }
        }
    }
  }
  return layouts;
}

void rank_candidates(std::vector<PlanCandidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.fits != b.fits) return a.fits;
    return a.fits ? a.time.total() < b.time.total() : a.memory.total() < b.memory.total();
  });
}

PlanResult plan_layouts(const PlanRequest& r, const PlanLayout& given, const ClusterSpec& cluster,
                        PipelineSimulation& simulation) {
  PlanResult result;
  result.given = evaluate_layout(r, given, cluster, simulation);
  for (const PlanLayout& l : allowed_layouts(r)) {
    // A split backward where no stock scheduler serves the shape that way (sched-zb runs one
    // model chunk per stage) is not a layout a run could take.
    if (l.split_backward &&
        !simulation.scheduler_name({l.pipeline, l.virtual_stages, r.global_batch / (l.micro_batch * l.data)}, true))
      continue;
    // The model state alone rules most layouts out; their schedules are not simulated.
    PlanCandidate state_only;
    state_only.layout = l;
    state_only.microbatches = r.global_batch / (l.micro_batch * l.data);
    state_only.memory = memory_per_gpu(r.model, l, cluster, {});
    if (state_only.memory.total() > cluster.memory_bytes)
      result.candidates.push_back(state_only);
    else
      result.candidates.push_back(evaluate_layout(r, l, cluster, simulation));
  }
  rank_candidates(result.candidates);
  return result;
}

}  // namespace ptdp
