// ptdp-host plan MANIFEST --cluster CLUSTER.toml [--set k=v]... [--json] [--svg FILE] [--top N]:
// memory per GPU and predicted step time of the manifest's layout and of every layout the
// manifest rules allow for its model, global batch and GPU count, on the cluster the file
// describes; ranked, with why the best wins. Exit status 0 when a layout fits, 1 when none does,
// 2 for a bad manifest, cluster file or GPU count.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command_registry.hpp"
#include "manifest/manifest_loader.hpp"
#include "plan/cluster_spec.hpp"
#include "plan/layout_search.hpp"
#include "runtime/kernels_activation_memory.hpp"
#include "plan/plan_report.hpp"
#include "plan/throughput_svg.hpp"
#include "manifest/model_math.hpp"

namespace ptdp::host {
namespace {

struct PlanOptions {
  std::string manifest, cluster, svg_file;
  std::vector<std::string> overrides, plugin_paths;
  bool json = false;
  int top = 10;
};

// The GPU count must be whole nodes of the cluster (or part of one), as a job is given them.
void check_gpu_count(const RunConfig& config, const ClusterSpec& cluster) {
  const int gpus = config.parallel.world_size(), per_node = cluster.gpus_per_node;
  if (config.launch.nproc_per_node > per_node)
    throw Error(fmt::format("{}: launch.nproc_per_node: {} GPUs per node, but a node of {} has {}", config.source,
                            config.launch.nproc_per_node, cluster.source, per_node));
  if (gpus > per_node && gpus % per_node != 0)
    throw Error(fmt::format("{}: launch.nproc_per_node: {} GPUs are not whole nodes of {} GPUs ({})", config.source,
                            gpus, per_node, cluster.source));
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << content;
  if (!out) throw Error("svg " + path + ": cannot write the file");
}

void run_plan(const PlanOptions& options) {
  PlanResult result;
  PlanContext context;
  ClusterSpec cluster;
  std::vector<std::string> notes;  // the loader's, such as where parallel.data came from
  try {
    const RunConfig config = load_manifest(options.manifest, options.overrides);
    notes = config.notes;
    // stdout may be the JSON document.
    for (const std::string& warning : config.warnings) std::cerr << "plan: warning: " << warning << "\n";
    cluster = load_cluster(options.cluster);
    check_gpu_count(config, cluster);
    const auto& p = config.parallel;
    context = {options.manifest, options.cluster, &cluster, {config.model, p.global_batch, p.world_size()}};
    PipelineSimulation simulation(options.plugin_paths);
    PlanLayout given{p.pipeline,        p.tensor,
                     p.data,            p.micro_batch,
                     p.virtual_stages,  p.full_recompute(),
                     p.distributed_optimizer, p.scatter_gather,
                     p.sequence_parallel, recompute_modules_of(config)};
    // The planner plans with the stock schedulers: the given layout splits the backward when the
    // manifest's scheduler is the one that serves its shape that way.
    given.split_backward =
        p.pipeline > 1 && simulation.scheduler_name({p.pipeline, p.virtual_stages, p.microbatches()}, true) ==
                              config.plugins.scheduler;
    result = plan_layouts(context.request, given, cluster, simulation);
    if (!options.svg_file.empty())
      write_file(options.svg_file,
                 throughput_svg(result, fmt::format("{}: {}B parameters, B = {}, {} GPUs ({})", config.run.name,
                                                    fmt::format("{:.1f}", static_cast<double>(parameter_count(config.model)) / 1e9),
                                                    p.global_batch, p.world_size(), cluster.name)));
  } catch (const Error& e) {
    std::cerr << "plan: " << e.what() << "\n";
    throw CLI::RuntimeError(2);
  }
  if (options.json) {
    nlohmann::json doc = plan_json(context, result);
    for (const std::string& note : notes) doc["notes"].push_back(note);
    std::cout << doc.dump() << "\n";
  } else {
    std::cout << plan_text(context, result, options.top);
    for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  }
  if (!result.best()) throw CLI::RuntimeError(1);
}

void add_plan(CLI::App& root) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* cmd = root.add_subcommand(
      "plan", "Memory per GPU and predicted step time of every layout for the manifest's model, batch and GPUs");
  cmd->add_option("MANIFEST", options->manifest, "Manifest file (TOML), see docs/manifest.md")->required();
  cmd->add_option("--cluster", options->cluster, "Cluster file (TOML), see docs/planning.md and clusters/")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--set", options->overrides, "Override a manifest key: key.path=value. Repeatable")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  cmd->add_flag("--json", options->json,
                "Print one JSON object: given, best, why, candidates (each with pipeline, tensor, data, micro_batch, "
                "virtual_stages, scheduler, split_backward, recompute, sequence_parallel, fits, memory_gib, step_time_s, tflops_per_gpu)");
  cmd->add_option("--svg", options->svg_file, "Draw predicted throughput against (p, t) to this SVG file")
      ->type_name("FILE");
  cmd->add_option("--top", options->top, "Ranked layouts to list in the text output")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--path", options->plugin_paths, "Folder searched first for the scheduler plugins (repeatable)")
      ->type_name("DIR");
  cmd->footer("Exit status: 0 a layout fits, 1 none fits, 2 bad manifest, cluster file or GPU count.");
  cmd->callback([options] { run_plan(*options); });
}

const RegisterHostCommand registration({"plan", 25, add_plan});

}  // namespace
}  // namespace ptdp::host
