// ptdp-host eval CHECKPOINT --data FILE: the loss and perplexity of a saved model on a file, the
// first thing to ask of a model after training. The step's stored manifest (metadata.config)
// rebuilds the model; it runs forward only, in one CPU process by default (kernels-ref, fp32),
// whatever layout trained it, since the checkpoint loads into any layout.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command_registry.hpp"
#include "data/corpus_encoder.hpp"
#include "data/run_tokenizer.hpp"
#include "data/token_dataset.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
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

// A folder of its own under the system's temporary folder, removed with what it holds.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ptdp-eval-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw Error(pattern + ": cannot create a temporary folder: " + std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Text is tokens only through the tokenizer the model learned: a step that records a subword
// tokenizer scores text encoded with it (into `scratch`), and is refused text it cannot encode.
std::string data_for_the_model(const EvalArgs& args, const nlohmann::json& metadata, const std::string& source,
                               const std::string& scratch) {
  if (!metadata.contains("tokenizer") || TokenDataset::open(args.data, args.format).format() != TokenFileFormat::Text)
    return args.data;
  const RunTokenizer tokenizer = RunTokenizer::from_json(metadata["tokenizer"], source);
  const TokenizerRecord& record = tokenizer.record;
  if (record.kind == "bytes") return args.data;
  if (record.kind != "sentencepiece" || tokenizer.file.empty())
    throw Error(fmt::format("{}: the model was trained on tokens of {}; {} is text, so encode it with that tokenizer "
                            "first ({}) and pass the token file",
                            source, record.describe(), args.data,
                            record.kind == "huggingface" ? "scripts/encode_hf.py" : "ptdp-host data encode"));
  const std::string model = scratch + "/" + record.name, tokens = scratch + "/eval.bin";
  tokenizer.write_file(model);
  CorpusEncoding encoding;
  encoding.out = tokens;
  encoding.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<EncodedFile> files = encode_corpus(list_text_inputs({args.data}), *open_tokenizer(model), encoding, nullptr);
  spdlog::info("eval: {} encoded with the step's tokenizer, {}: {} tokens", args.data, record.describe(), files[0].tokens);
  return tokens;
}

int eval_command(const EvalArgs& args) {
  const StoredStep stored = open_stored_step(args.checkpoint, args.step, args.store);
  const int64_t step = stored.step;
  const nlohmann::json& metadata = stored.metadata;
  const std::string source = fmt::format("{} step {}", args.checkpoint, step);
  const ScratchFolder scratch;
  const std::string data = data_for_the_model(args, metadata, source, scratch.path());
  const nlohmann::json& config_json = metadata["config"];
  // One process on the CPU, forward only from `step`; --set may change any of it.
  std::vector<std::string> overrides = {
      "parallel.tensor=1", "parallel.pipeline=1", "parallel.data=1", "parallel.virtual_stages=1",
      "launch.nproc_per_node=1", "launch.nnodes=1", "plugins.comm=comm-ucx", "plugins.kernels=kernels-ref",
      "plugins.scheduler=sched-1f1b", "precision.params=fp32", "checkpoint.dir=\"\"", "checkpoint.every=0",
      "checkpoint.keep=0", "data.val_every=0", "data.val_fraction=0.0",
      fmt::format("checkpoint.resume_from={}", nlohmann::json(args.checkpoint).dump()),
      fmt::format("checkpoint.resume_step={}", step), fmt::format("run.steps={}", std::max<int64_t>(step, 1)),
      fmt::format("data.path={}", nlohmann::json(data).dump()), "data.val_path=[]", "data.weights=[]",
      "data.tokenizer=\"\"", fmt::format("data.format={}", nlohmann::json(data == args.data ? args.format : "ptdp").dump())};
  // Trains nothing: the schedule only has to match the saved one, so no change is reported.
  if (metadata.contains("schedule"))
    overrides.push_back(fmt::format("optimizer.decay_steps={}", metadata["schedule"].value("decay_steps", int64_t{0})));
  // Options of the plugins the training run used may not fit the ones eval loads.
  for (const char* slot : {"comm", "kernels", "scheduler"})
    if (config_json.contains("plugins") && config_json["plugins"].contains("options"))
      overrides.push_back(fmt::format("plugins.options.{}={{}}", slot));
  overrides.insert(overrides.end(), args.sets.begin(), args.sets.end());
  RunConfig config = load_manifest_string(manifest_text(config_json), source, overrides);
  if (config.parallel.world_size() != 1)
    throw Error(fmt::format("{}: eval runs in one process: leave parallel.tensor, parallel.pipeline and "
                            "parallel.data at 1 (any layout's checkpoint loads into it)",
                            source));
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
