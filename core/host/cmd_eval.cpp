// ptdp-host eval CHECKPOINT --data FILE: the loss and perplexity of a saved model on a file, the
// first thing to ask of a model after training. The step's stored manifest (metadata.config)
// rebuilds the model; it runs forward only, in one CPU process by default (kernels-ref, fp32),
// whatever layout trained it, since the checkpoint loads into any layout.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command_registry.hpp"
#include "data/corpus_encoder.hpp"
#include "data/token_dataset.hpp"
#include "manifest_plugins.hpp"
#include "runtime/trainer.hpp"
#include "step_tokenizer.hpp"
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

// Text is tokens only through the tokenizer the model learned: a step that records a subword
// tokenizer scores text encoded with it (into the step tokenizer's folder), and is refused text
// it cannot encode.
std::string data_for_the_model(const EvalArgs& args, const StepTokenizer& step, const std::string& source) {
  if (!step.recorded() || step.recorded()->record.kind == "bytes" ||
      TokenDataset::open(args.data, args.format).format() != TokenFileFormat::Text)
    return args.data;
  const TokenizerRecord& record = step.recorded()->record;
  if (!step.tokenizer())
    throw Error(fmt::format("{}: the model was trained on tokens of {}; {} is text, so encode it with that tokenizer "
                            "first ({}) and pass the token file",
                            source, record.describe(), args.data,
                            record.kind == "huggingface" ? "scripts/encode_hf.py" : "ptdp-host data encode"));
  CorpusEncoding encoding;
  encoding.out = step.folder() + "/eval.bin";
  encoding.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<EncodedFile> files = encode_corpus(list_text_inputs({args.data}), *step.tokenizer(), encoding, nullptr);
  spdlog::info("eval: {} encoded with the step's tokenizer, {}: {} tokens", args.data, record.describe(), files[0].tokens);
  return encoding.out;
}

int eval_command(const EvalArgs& args) {
  const StoredStep stored = open_stored_step(args.checkpoint, args.step, args.store);
  const std::string source = fmt::format("{} step {}", args.checkpoint, stored.step);
  const StepTokenizer step(stored.metadata, source);
  const std::string data = data_for_the_model(args, step, source);
  // The step's own tokenizer judges the data; the file the training run named may be elsewhere now.
  std::vector<std::string> overrides = {
      fmt::format("data.path={}", nlohmann::json(data).dump()), "data.val_path=[]", "data.weights=[]",
      "data.tokenizer=\"\"", fmt::format("data.format={}", nlohmann::json(data == args.data ? args.format : "ptdp").dump())};
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
