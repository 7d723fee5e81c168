// ptdp-host import hf HF_DIR MANIFEST: a Hugging Face GPT-2 folder (config.json,
// model.safetensors) as step 0 of the manifest's checkpoint.dir, so `ptdp-host run MANIFEST`
// starts from GPT-2's weights (Adam moments zero) under any layout.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "checkpoint/hf_gpt2_layout.hpp"
#include "checkpoint/resume_point.hpp"
#include "checkpoint/safetensors_reader.hpp"
#include "command_registry.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
#include "metrics/schedule_state.hpp"
#include "plugin/manifest_plugin_set.hpp"

namespace ptdp::host {
namespace {

namespace fs = std::filesystem;

struct ImportArgs {
  std::string hf_dir;
  std::string manifest;
  std::vector<std::string> sets;
};

nlohmann::json read_config_json(const fs::path& path) {
  // Bounded, and a folder, FIFO or missing file named as such (a stream would say only
  // "basic_filebuf::underflow ... Is a directory").
  const nlohmann::json config = nlohmann::json::parse(read_config_file(path.string(), "config.json"), nullptr, false);
  if (!config.is_object()) throw Error(path.string() + ": not a JSON object");
  return config;
}

void import_hf(const ImportArgs& args) {
  const RunConfig config = load_manifest(args.manifest, args.sets);
  for (const std::string& warning : config.warnings) spdlog::warn("{}", warning);
  const std::string& dir = config.checkpoint.dir;
  if (dir.empty()) throw Error(fmt::format("{}: checkpoint.dir is not set: the import needs somewhere to go", config.source));
  const fs::path config_path = fs::path(args.hf_dir) / "config.json";
  const std::string mismatch = hf_gpt2_config_mismatch(read_config_json(config_path), config.model);
  if (!mismatch.empty())
    throw Error(fmt::format("{} does not describe the model of {}: {}", config_path.string(), config.source, mismatch));
  const std::string weights_path = (fs::path(args.hf_dir) / "model.safetensors").string();
  const std::map<std::string, NamedF32Tensor> weights = read_safetensors(weights_path);

  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  auto store = create_slot_plugin<CheckpointStore>(registry, config.plugins);
  store->open(dir);
  if (const std::vector<int64_t> steps = store->list_steps(); !steps.empty())
    throw Error(fmt::format("checkpoint.dir {} holds committed steps {} of another run; import into an empty one",
                            dir, step_list(steps)));
  // Every tensor is checked before the first is written: present, of the model's shape, finite;
  // and the file holds nothing else (beyond the attention masks older transformers saved, and the
  // head's copy of the tied embedding), so a file of another model is not half read.
  const std::vector<HfGpt2Tensor> layout = hf_gpt2_tensors(config.model);
  for (const HfGpt2Tensor& t : layout) {
    auto found = weights.find(t.hf_name);
    if (found == weights.end()) throw Error(fmt::format("{}: no tensor '{}'", weights_path, t.hf_name));
    if (found->second.shape != t.hf_shape)
      throw Error(fmt::format("{}: tensor '{}' is {}, the model's is {}", weights_path, t.hf_name,
                              shape_string(found->second.shape), shape_string(t.hf_shape)));
    const std::vector<float>& values = found->second.values;
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        throw Error(fmt::format("{}: tensor '{}' holds {} at element {}: a model to train from has finite weights",
                                weights_path, t.hf_name, values[i], i));
  }
  for (const auto& [name, tensor] : weights) {
    const bool used = std::any_of(layout.begin(), layout.end(), [&](const HfGpt2Tensor& t) { return t.hf_name == name; });
    const auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (!used && !ends_with(".attn.bias") && !ends_with(".attn.masked_bias") && name != "lm_head.weight")
      throw Error(fmt::format("{}: tensor '{}' is not part of the GPT-2 of {} (another model's file?)", weights_path,
                              name, config.source));
  }
  for (const HfGpt2Tensor& t : layout) {
    const std::vector<float> values = t.to_ptdp(weights.at(t.hf_name).values);
    const std::vector<float> zeros(values.size(), 0.0f);
    const std::vector<int64_t> origin(t.ptdp_shape.size(), 0);
    store->write_shard(0, 0, ShardInfo{t.ptdp_name, DType::F32, t.ptdp_shape, origin, t.ptdp_shape}, values.data());
    for (const char* moment : {".exp_avg", ".exp_avg_sq"})
      store->write_shard(0, 0, ShardInfo{t.ptdp_name + moment, DType::F32, t.ptdp_shape, origin, t.ptdp_shape},
                         zeros.data());
  }
  store->finish_rank(0, 0);
  const nlohmann::json metadata = {{"step", 0},
                                   {"imported_from", fs::absolute(args.hf_dir).string()},
                                   {"config", run_config_json(config)},
                                   {"schedule", schedule_record(schedule_of(config))}};
  store->commit(0, 1, metadata.dump());
  spdlog::info("imported {} ({} tensors) as step 0 of {}: ptdp-host run {} starts from it", args.hf_dir, layout.size(),
               dir, args.manifest);
}

void add_import(CLI::App& root) {
  auto args = std::make_shared<ImportArgs>();
  auto* cmd = root.add_subcommand("import", "Make a checkpoint step from another tool's model");
  cmd->require_subcommand(1);
  auto* hf = cmd->add_subcommand("hf", "A Hugging Face GPT-2 folder as step 0 of the manifest's checkpoint.dir");
  hf->add_option("hf_dir", args->hf_dir, "Folder with config.json and model.safetensors (F32)")->required();
  hf->add_option("manifest", args->manifest, "Manifest of the run that starts from it")->required()->check(CLI::ExistingFile);
  hf->add_option("--set", args->sets, "Override a manifest key: --set checkpoint.dir=\"ckpt\"");
  hf->callback([args] {
    try {
      import_hf(*args);
    } catch (const Error& e) {
      spdlog::error("{}", e.what());
      throw CLI::RuntimeError(1);
    }
  });
}

const RegisterHostCommand registration{{"import", 48, add_import}};

}  // namespace
}  // namespace ptdp::host
