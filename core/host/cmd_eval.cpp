// ptdp-host eval CHECKPOINT --data FILE: the loss and perplexity of a saved model on a file, the
// first thing to ask of a model after training. The step's stored manifest (metadata.config)
// rebuilds the model; it runs forward only, in one CPU process by default (kernels-ref, fp32),
// whatever layout trained it, since the checkpoint loads into any layout.
#include <spdlog/spdlog.h>

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command_registry.hpp"
#include "manifest_plugins.hpp"
#include "runtime/trainer.hpp"
#include "stored_step.hpp"

namespace ptdp::host {
namespace {

struct EvalArgs {
  std::string checkpoint;
  std::string data;
  std::string format = "auto";
  std::string store = "ckpt-fs";
  int64_t step = 0;
  int batches = 8;
  std::vector<std::string> sets;
};

int eval_command(const EvalArgs& args) {
  const StoredStep stored = open_stored_step(args.checkpoint, args.step, args.store);
  std::vector<std::string> overrides = {fmt::format("data.path={}", nlohmann::json(args.data).dump()),
                                        fmt::format("data.format={}", nlohmann::json(args.format).dump())};
  overrides.insert(overrides.end(), args.sets.begin(), args.sets.end());
  const RunConfig config = one_process_config(stored, args.checkpoint, "eval", overrides);
  check_manifest_plugins(config);
  TrainOptions options;
  options.eval_batches = args.batches;
  RankEnvironment single;
  single.master_addr = "127.0.0.1";
  train_rank(config, single, options);
  return 0;
}

const RegisterHostCommand registration{{"eval", 45, [](CLI::App& root) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = root.add_subcommand("eval", "Loss and perplexity of a checkpoint's model on a data file");
  cmd->add_option("checkpoint", args->checkpoint, "Checkpoint folder (checkpoint.dir of the run)")->required();
  cmd->add_option("--data", args->data, "Data file: a token file or text (see docs/data-format.md)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", args->format, "How to read --data: auto, ptdp, llmc or text")
      ->check(CLI::IsMember({"auto", "ptdp", "llmc", "text"}));
  cmd->add_option("--step", args->step, "Committed step to evaluate (default: the newest)")->check(CLI::PositiveNumber);
  cmd->add_option("--batches", args->batches, "Global batches of the stored manifest to average over")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--store", args->store, "CheckpointStore plugin that wrote the folder");
  cmd->add_option("--set", args->sets, "Override a key of the stored manifest: --set parallel.tensor=2");
  cmd->callback([args] {
    try {
      eval_command(*args);
    } catch (const Error& e) {
      spdlog::error("{}", e.what());
      throw CLI::RuntimeError(1);
    }
  });
}}};

}  // namespace
}  // namespace ptdp::host
