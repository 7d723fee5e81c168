// ptdp-host run MANIFEST: trains. Without a launcher's environment it starts
// launch.nproc_per_node local rank processes itself (each re-runs this command as one rank);
// under mpirun, srun or torchrun each process is already one rank.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "checkpoint/checkpoint_preflight.hpp"
#include "command_registry.hpp"
#include "manifest_plugins.hpp"
#include "data/output_guard.hpp"
#include "data/run_tokenizer.hpp"
#include "launch/local_launcher.hpp"
#include "launch/rank_environment.hpp"
#include "launch/rendezvous_secret.hpp"
#include "manifest/manifest_loader.hpp"
#include "profile/device_profiler_library.hpp"
#include "runtime/stop_signal.hpp"
#include "runtime/trainer.hpp"

namespace ptdp::host {
namespace {

struct RunArgs {
  std::string manifest;
  std::vector<std::string> sets;
  int nproc = 0;
  int node_rank = 0;  // which of launch.nnodes nodes this is, when ptdp-host starts the ranks
  TrainOptions train;
};

int exit_code(TrainOutcome outcome) { return outcome == TrainOutcome::Finished ? 0 : kExitStoppedBySignal; }

int run_command(const RunArgs& args, const std::vector<std::string>& argv) {
  // --nproc is launch.nproc_per_node given on the command line; the manifest's rules see it.
  std::vector<std::string> overrides = args.sets;
  if (args.nproc > 0) overrides.push_back("launch.nproc_per_node=" + std::to_string(args.nproc));
  const auto env = detect_rank_environment();
  // Our own launcher's world is the manifest's launch table, which the loader reads anyway.
  std::optional<LaunchedWorld> launched;
  if (env && env->launcher != "ptdp") launched = LaunchedWorld{env->launcher, env->world_size};
  RunConfig config;
  try {
    config = load_manifest(args.manifest, overrides, launched);
    check_manifest_plugins(config);
  } catch (const ManifestError& e) {
    // Every rank of an external launcher finds the same problem; rank 0 says it.
    if (!env || env->rank == 0) spdlog::error("{}", e.what());
    return kExitInvalidManifest;
  }
  // What concerns the whole job is said and checked once: by the process that starts our own
  // launcher's ranks (not again by them), or by rank 0 of an external launcher.
  // Over several nodes that is node 0's launcher, which holds rank 0.
  if (!env && args.node_rank >= config.launch.nnodes)
    throw Error(fmt::format("--node-rank {}: outside launch.nnodes = {} (nodes 0 to {})", args.node_rank,
                            config.launch.nnodes, config.launch.nnodes - 1));
  if (env && args.node_rank != 0 && env->launcher != "ptdp")
    throw Error(fmt::format("--node-rank is for ptdp-host's own launcher; {} places the ranks itself", env->launcher));
  const bool speaks_for_job = (!env && args.node_rank == 0) || (env && env->launcher != "ptdp" && env->rank == 0);
  if (speaks_for_job) {
    // Notes say what the loader decided for the job (where parallel.data came from, a launch
    // table an external launcher's world overrides), as validate prints them.
    for (const std::string& note : config.notes) spdlog::info("note: {}", note);
    for (const std::string& warning : config.warnings) spdlog::warn("{}", warning);
  }
  // Outputs written at the end (the trace) or by rank 0 only (the metrics) are tested first, so
  // that a run never trains for nothing.
  if (!env || env->rank == 0) {
    if (!args.train.metrics_path.empty()) refuse_unwritable_file(args.train.metrics_path, "--metrics");
    if (!args.train.trace_path.empty()) refuse_unwritable_file(args.train.trace_path, "--trace");
  }
  // --profile without a GPU, once before any rank starts rather than by every rank.
  if (args.train.profile && (!env || env->rank == 0)) check_profilable(kernels_memory(config), config.plugins.kernels);
  // Bad data fails here, before any rank or plugin starts.
  run_tokenizer(config, RunData::open(config));
  // So does a checkpoint folder the run cannot use; once per job.
  if (speaks_for_job) prepare_checkpoint_folder(config);
  if (env) {
    check_world_size(config, env->world_size);
    try {
      return exit_code(train_rank(config, *env, args.train));
    } catch (const std::exception& e) {
      spdlog::error("rank {}: {}", env->rank, e.what());
      return 1;
    }
  }
  const int nproc = config.launch.nproc_per_node;
  const int nnodes = config.launch.nnodes;
  if (nproc == 1 && nnodes == 1) {
    try {
      RankEnvironment single;
      single.master_addr = "127.0.0.1";
      return exit_code(train_rank(config, single, args.train));
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 1;
    }
  }
  LaunchOptions launch;
  launch.master_addr = config.launch.master_addr;
  launch.master_port = config.launch.master_port;
  launch.nnodes = nnodes;
  launch.node_rank = args.node_rank;
  launch.stopped_by_signal_code = kExitStoppedBySignal;
  if (nnodes > 1 && is_loopback_host(launch.master_addr))
    throw Error(fmt::format("{}: launch.nnodes = {} with launch.master_addr = \"{}\": the other nodes cannot "
                            "reach a loopback address; give node 0's address on every node",
                            config.source, nnodes, launch.master_addr));
  if (nnodes > 1)
    spdlog::info("{}: node {} of {}: starting ranks {} to {} of {} (p={} t={} d={} v={}), store at {}:{}",
                 config.source, args.node_rank, nnodes, args.node_rank * nproc, (args.node_rank + 1) * nproc - 1,
                 nproc * nnodes, config.parallel.pipeline, config.parallel.tensor, config.parallel.data,
                 config.parallel.virtual_stages, launch.master_addr, launch.master_port);
  else
    spdlog::info("{}: starting {} ranks (p={} t={} d={} v={})", config.source, nproc, config.parallel.pipeline,
                 config.parallel.tensor, config.parallel.data, config.parallel.virtual_stages);
  return launch_local_ranks(nproc, argv, launch);
}

const RegisterHostCommand registration{{"run", 10, [](CLI::App& root) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = root.add_subcommand("run", "Train the model a manifest describes");
  cmd->add_option("manifest", args->manifest, "Manifest (TOML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", args->sets, "Override a manifest key: --set parallel.tensor=2 (repeatable)");
  cmd->add_option("--nproc", args->nproc, "Local rank processes to start (default: launch.nproc_per_node)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--node-rank", args->node_rank,
                  "Which node this is of launch.nnodes (0 holds rank 0 and the store at launch.master_addr); "
                  "it starts ranks node-rank * nproc_per_node onwards (docs/launching.md)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--metrics", args->train.metrics_path, "Write one JSON object per step to this .jsonl file");
  cmd->add_option("--trace", args->train.trace_path, "Write a Chrome/Perfetto trace of every rank's timeline");
  cmd->add_option("--trace-steps", args->train.trace_steps,
                  "Steps recorded in the trace and the profile, after one warm-up step")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--profile", args->train.profile,
                "Record every GPU kernel and copy of the traced steps (CUPTI), print a table per rank, and add "
                "one track per GPU stream to --trace (docs/profiling.md)");
  cmd->callback([args] {
    std::vector<std::string> argv = {"/proc/self/exe", "run", args->manifest};
    for (const auto& s : args->sets) argv.insert(argv.end(), {"--set", s});
    if (args->nproc > 0) argv.insert(argv.end(), {"--nproc", std::to_string(args->nproc)});
    if (args->node_rank > 0) argv.insert(argv.end(), {"--node-rank", std::to_string(args->node_rank)});
    if (!args->train.metrics_path.empty()) argv.insert(argv.end(), {"--metrics", args->train.metrics_path});
    if (!args->train.trace_path.empty()) argv.insert(argv.end(), {"--trace", args->train.trace_path});
    argv.insert(argv.end(), {"--trace-steps", std::to_string(args->train.trace_steps)});
    if (args->train.profile) argv.push_back("--profile");
    const int code = run_command(*args, argv);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}}};

}  // namespace
}  // namespace ptdp::host
