// ptdp-host export hf CHECKPOINT OUT_DIR: a saved step as a Hugging Face GPT-2 folder
// (config.json with every dimension, model.safetensors in GPT2LMHeadModel's names and layout,
// the tokenizer when the step holds one, with a tokenizer_config.json for a SentencePiece model),
// whatever layout trained it: each tensor is read whole
// from its shards.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "checkpoint/hf_gpt2_layout.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "command_registry.hpp"
#include "data/output_guard.hpp"
#include "data/run_tokenizer.hpp"
#include "data/sentencepiece_hf_config.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
#include "stored_step.hpp"

namespace ptdp::host {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string checkpoint;
  std::string out_dir;
  std::string store = "ckpt-fs";
  int64_t step = 0;
};

// Written under a temporary name and renamed into place, so a failed write leaves no half file.
void write_json(const fs::path& path, const nlohmann::json& value) {
  TemporaryFile written(path.string() + ".tmp");
  std::ofstream out(written.path());
  out << value.dump(2) << "\n";
  out.close();
  std::error_code ec;
  fs::rename(written.path(), path, ec);
  if (!out || ec) throw Error(fmt::format("{}: cannot write", path.string()));
  written.keep();
}

void export_hf(const ExportArgs& args) {
  // Nothing already there is replaced, and the checkpoint itself is never written into.
  refuse_folder_in_use(args.out_dir, args.checkpoint);
  const StoredStep stored = open_stored_step(args.checkpoint, args.step, args.store);
  const std::string source = fmt::format("{} step {}", args.checkpoint, stored.step);
  const RunConfig config = load_manifest_string(manifest_text(stored.metadata["config"]), source);
  std::vector<NamedF32Tensor> tensors;
  for (const HfGpt2Tensor& t : hf_gpt2_tensors(config.model)) {
    std::vector<float> values(static_cast<size_t>(t.ptdp_elements()));
    stored.store->read(stored.step,
                       ShardInfo{t.ptdp_name, DType::F32, t.ptdp_shape, std::vector<int64_t>(t.ptdp_shape.size(), 0),
                                 t.ptdp_shape},
                       values.data());
    tensors.push_back({t.hf_name, t.hf_shape, t.to_hf(values)});
  }
  std::error_code ec;
  fs::create_directories(args.out_dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create folder: {}", args.out_dir, ec.message()));
  write_safetensors((fs::path(args.out_dir) / "model.safetensors").string(), tensors);
  write_json(fs::path(args.out_dir) / "config.json", hf_gpt2_config(config.model));
  // The tokenizer the step holds, under the name Hugging Face's loaders look for.
  std::string tokenizer_note;
  if (stored.metadata.contains("tokenizer")) {
    const RunTokenizer tokenizer = RunTokenizer::from_json(stored.metadata["tokenizer"], source);
    const std::string name = tokenizer.record.kind == "huggingface" ? "tokenizer.json" : "tokenizer.model";
    if (!tokenizer.file.empty()) {
      tokenizer.write_file((fs::path(args.out_dir) / name).string());
      tokenizer_note = fmt::format(" and its tokenizer ({}, {})", name, tokenizer.record.describe());
      // A tokenizer.json names its own class; a bare tokenizer.model needs this beside it.
      if (tokenizer.record.kind == "sentencepiece")
        write_json(fs::path(args.out_dir) / "tokenizer_config.json",
                   sentencepiece_hf_tokenizer_config(tokenizer.file, config.model.seq_len));
    }
  }
  spdlog::info("exported step {} of {} ({} tensors){} to {} as a Hugging Face GPT-2", stored.step, args.checkpoint,
               tensors.size(), tokenizer_note, args.out_dir);
}

void add_export(CLI::App& root) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = root.add_subcommand("export", "Write a checkpoint step in another tool's format");
  cmd->require_subcommand(1);
  auto* hf = cmd->add_subcommand("hf", "A Hugging Face GPT-2 folder: config.json and model.safetensors");
  hf->add_option("checkpoint", args->checkpoint, "Checkpoint folder (checkpoint.dir of the run)")->required();
  hf->add_option("out_dir", args->out_dir, "Folder to write: new or empty, outside the checkpoint folder (created if absent)")->required();
  hf->add_option("--step", args->step, "Committed step to export (default: the newest)")->check(CLI::PositiveNumber);
  hf->add_option("--store", args->store, "CheckpointStore plugin that wrote the folder");
  hf->callback([args] {
    try {
      export_hf(*args);
    } catch (const Error& e) {
      spdlog::error("{}", e.what());
      throw CLI::RuntimeError(1);
    }
  });
}

const RegisterHostCommand registration{{"export", 47, add_export}};

}  // namespace
}  // namespace ptdp::host
