// ptdp-host sample CHECKPOINT --prompt TEXT: text from a saved model, the other first thing to ask
// of it after training. Like eval, the step's stored manifest rebuilds the model in one CPU
// process (kernels-ref, fp32) whatever layout trained it. Tokens are bytes (the byte-level data
// of text files), or the pieces of the SentencePiece tokenizer the step holds; a model with
// another vocabulary takes and gives token ids.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command_registry.hpp"
#include "finite_number.hpp"
#include "manifest_plugins.hpp"
#include "runtime/model_chunk.hpp"
#include "runtime/text_generation.hpp"
#include "runtime/trainer.hpp"
#include "step_tokenizer.hpp"
#include "stored_step.hpp"

namespace ptdp::host {
namespace {

struct SampleArgs {
  std::string checkpoint;
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  bool ids = false;
  std::string logits_path;
  int tokens = 200;
  float temperature = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
  std::string store = "ckpt-fs";
  int64_t step = 0;
  std::vector<std::string> sets;
};

// `tokenizer`: the step's, which encodes --prompt; null for byte-level models (one token a byte).
std::vector<int32_t> prompt_tokens(const SampleArgs& args, int vocab, const Tokenizer* tokenizer) {
  if (!args.prompt_ids.empty() && !args.prompt.empty()) throw Error("sample: give --prompt or --prompt-ids, not both");
  std::vector<int32_t> tokens = args.prompt_ids;
  if (tokenizer) tokenizer->encode(args.prompt, tokens);
  else for (unsigned char byte : args.prompt) tokens.push_back(byte);
  if (tokens.empty()) throw Error("sample: an empty prompt (give --prompt TEXT or --prompt-ids 1,2,3)");
  for (int32_t t : tokens)
    if (t < 0 || t >= vocab)
      throw Error(fmt::format("sample: prompt token {} is outside the model's vocabulary [0, {}){}", t, vocab,
                              args.prompt.empty() || tokenizer ? "" : " (--prompt gives one token per byte)"));
  return tokens;
}

int sample_command(const SampleArgs& args) {
  // stdout carries the text alone, so it can be piped; what the run reports goes to stderr.
  auto to_stderr = spdlog::stderr_color_mt("sample");
  to_stderr->set_pattern("[%H:%M:%S] %^%l%$ %v");
  spdlog::set_default_logger(to_stderr);
  const StoredStep stored = open_stored_step(args.checkpoint, args.step, args.store);
  std::vector<std::string> overrides = {"parallel.micro_batch=1", "parallel.global_batch=1"};
  overrides.insert(overrides.end(), args.sets.begin(), args.sets.end());
  const RunConfig config = one_process_config(stored, args.checkpoint, "sample", overrides);
  check_manifest_plugins(config);
  const StepTokenizer step(stored.metadata, fmt::format("{} step {}", args.checkpoint, stored.step));
  const Tokenizer* tokenizer = step.tokenizer();
  if (step.recorded() && step.recorded()->record.kind != "bytes" && !tokenizer && !args.prompt.empty())
    throw Error(fmt::format("sample: the model was trained on tokens of {}, which ptdp-host cannot encode with; give "
                            "the prompt as --prompt-ids",
                            step.recorded()->record.describe()));
  GenerationRequest request;
  request.prompt = prompt_tokens(args, config.model.vocab, tokenizer);
  request.new_tokens = args.tokens;
  request.temperature = args.temperature;
  request.top_k = args.top_k;
  request.seed = args.seed;
  // Bytes only mean text when every id is a byte; other ids, through the step's tokenizer.
  const bool as_ids = args.ids || (config.model.vocab > 256 && !tokenizer);
  // With a tokenizer, the text of prompt and continuation together, less what is already out: the
  // first piece's leading space and a character's later bytes depend on the pieces around them.
  std::vector<int32_t> generated = request.prompt;
  std::string printed = tokenizer ? tokenizer->decode(generated) : "";
  std::ofstream logits_file;
  if (!args.logits_path.empty()) {
    logits_file.open(args.logits_path);
    if (!logits_file) throw Error(fmt::format("sample: cannot write --logits {}: {}", args.logits_path, std::strerror(errno)));
  }
  TrainOptions options;
  options.use_loaded_model = [&](LayerKernels& kernels, ModelChunk& model, const ModelSpec& spec) {
    const auto start = std::chrono::steady_clock::now();
    bool first = true;
    generate(kernels, model, spec, request, [&](int32_t token, const std::vector<float>& logits) {
      if (as_ids) {
        std::printf("%s%d", first ? "" : ",", token);
      } else if (tokenizer) {
        generated.push_back(token);
        const std::string text = tokenizer->decode(generated);
        if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
          std::fwrite(text.data() + printed.size(), 1, text.size() - printed.size(), stdout);
          printed = text;
        }
      } else {
        std::putchar(token);
      }
      first = false;
      std::fflush(stdout);
      if (logits_file.is_open()) logits_file << nlohmann::json{{"token", token}, {"logits", logits}}.dump() << '\n';
    });
    if (logits_file.is_open() && !logits_file.flush())
      throw Error(fmt::format("sample: writing --logits {} failed", args.logits_path));
    std::putchar('\n');
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    spdlog::info("sample: {} tokens from step {} in {:.1f} s ({:.1f} tokens/s)", args.tokens, stored.step, s,
                 args.tokens / s);
  };
  RankEnvironment single;
  single.master_addr = "127.0.0.1";
  train_rank(config, single, options);
  return 0;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    try {
      size_t used = 0;
      const long value = std::stol(item, &used);
      if (used != item.size() || value < 0 || value > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(value));
    } catch (const std::exception&) {
      throw CLI::ValidationError("--prompt-ids", fmt::format("'{}' is not a token id (ids are comma-separated)", item));
    }
    at = comma + 1;
  }
  return ids;
}

const RegisterHostCommand registration{{"sample", 46, [](CLI::App& root) {
  auto args = std::make_shared<SampleArgs>();
  auto* cmd = root.add_subcommand("sample", "Text generated by a checkpoint's model from a prompt");
  cmd->add_option("checkpoint", args->checkpoint, "Checkpoint folder (checkpoint.dir of the run)")->required();
  cmd->add_option("--prompt", args->prompt, "Prompt text: one token per byte, or the pieces of the step's SentencePiece tokenizer");
  cmd->add_option_function<std::string>("--prompt-ids", [args](const std::string& s) { args->prompt_ids = parse_ids(s); },
                                        "Prompt as token ids: 17,4,99");
  cmd->add_flag("--ids", args->ids, "Print token ids instead of text (always so when model.vocab > 256 and the step holds no SentencePiece tokenizer)");
  cmd->add_option("--logits", args->logits_path,
                  "Also write, a JSON line per new token, the logits it was drawn from (ids below model.vocab)");
  cmd->add_option("--tokens", args->tokens, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", args->temperature, "Softmax temperature; 0 takes the most likely token")
      ->check(finite_number() & CLI::Range(0.0f, 100.0f));
  cmd->add_option("--top-k", args->top_k, "Draw among the k most likely tokens only (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", args->seed, "Seed of the draws: the same seed gives the same text");
  cmd->add_option("--step", args->step, "Committed step to sample from (default: the newest)")->check(CLI::PositiveNumber);
  cmd->add_option("--store", args->store, "CheckpointStore plugin that wrote the folder");
  cmd->add_option("--set", args->sets, "Override a key of the stored manifest: --set plugins.kernels=kernels-fused");
  cmd->callback([args] {
    try {
      sample_command(*args);
    } catch (const Error& e) {
      spdlog::error("{}", e.what());
      throw CLI::RuntimeError(1);
    }
  });
}}};

}  // namespace
}  // namespace ptdp::host
