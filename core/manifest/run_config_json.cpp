#include "manifest/run_config_json.hpp"

#include <sstream>

#include "plugin/plugin_slots.hpp"

namespace ptdp {

namespace {

// Plugin options are free-form TOML tables (each plugin's schema says what they hold); toml++
// writes them as JSON text, which nlohmann reads back.
nlohmann::ordered_json toml_table_json(const toml::table& table) {
  std::ostringstream text;
  text << toml::json_formatter{table};
  return nlohmann::ordered_json::parse(text.str());
}

// One table and its sub-tables; JSON scalars and arrays of strings are TOML values as written.
std::string toml_table(const nlohmann::json& table, const std::string& name) {
  std::string out = "[" + name + "]\n", nested;
  for (const auto& [key, value] : table.items()) {
    if (value.is_object()) nested += toml_table(value, name + "." + key);
    else out += key + " = " + value.dump() + "\n";
  }
  return out + nested;
}

// Configurations stored before the communicator's slot was spelt out call it `comm`, as key and
// as option table; read back, they name it as a manifest does now.
void rename_old_communicator_slot(nlohmann::json& plugins) {
  auto rename = [](nlohmann::json& table) {
    if (!table.is_object() || !table.contains("comm")) return;
    table[plugin_slot(PluginKind::Communicator).name] = std::move(table["comm"]);
    table.erase("comm");
  };
  rename(plugins);
  if (plugins.contains("options")) rename(plugins["options"]);
}

}  // namespace

std::string manifest_text(const nlohmann::json& resolved) {
  nlohmann::json keys = resolved;
  if (keys.contains("model")) keys["model"].erase("padded_vocab");
  if (keys.contains("plugins")) rename_old_communicator_slot(keys["plugins"]);
  std::string text;
  for (const auto& [table, values] : keys.items()) text += toml_table(values, table) + "\n";
  return text;
}

nlohmann::ordered_json run_config_json(const RunConfig& c) {
  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  for (const auto& [slot, table] : c.plugins.options) options[slot] = toml_table_json(table);
  nlohmann::ordered_json plugins = nlohmann::ordered_json::object();
  for (const PluginSlot& slot : kPluginSlots) plugins[slot.name] = slot.named_in(c.plugins);
  plugins["search_path"] = c.plugins.search_path;
  plugins["options"] = options;
  return {
      {"run", {{"name", c.run.name}, {"steps", c.run.steps}, {"seed", c.run.seed}, {"log_every", c.run.log_every}}},
      {"model",
       {{"layers", c.model.layers}, {"hidden", c.model.hidden}, {"heads", c.model.heads},
        {"seq_len", c.model.seq_len}, {"vocab", c.model.vocab}, {"padded_vocab", c.model.padded_vocab},
        {"ffn_hidden", c.model.ffn_hidden}, {"dropout", c.model.dropout}, {"layernorm_eps", c.model.layernorm_eps}}},
      {"parallel",
       {{"tensor", c.parallel.tensor}, {"pipeline", c.parallel.pipeline}, {"data", c.parallel.data},
        {"virtual_stages", c.parallel.virtual_stages}, {"micro_batch", c.parallel.micro_batch},
        {"global_batch", c.parallel.global_batch}, {"scatter_gather", c.parallel.scatter_gather},
        {"sequence_parallel", c.parallel.sequence_parallel}, {"recompute", c.parallel.recompute},
        {"recompute_every", c.parallel.recompute_every}, {"recompute_modules", c.parallel.recompute_modules},
        {"distributed_optimizer", c.parallel.distributed_optimizer},
        {"overlap_param_gather", c.parallel.overlap_param_gather}, {"bucket_elements", c.parallel.bucket_elements}}},
      {"optimizer",
       {{"type", c.optimizer.type}, {"lr", c.optimizer.lr}, {"min_lr", c.optimizer.min_lr},
        {"beta1", c.optimizer.beta1}, {"beta2", c.optimizer.beta2}, {"eps", c.optimizer.eps},
        {"weight_decay", c.optimizer.weight_decay}, {"grad_clip", c.optimizer.grad_clip},
        {"warmup_steps", c.optimizer.warmup_steps}, {"decay_steps", c.optimizer.decay_steps},
        {"decay", c.optimizer.decay}}},
      {"precision",
       {{"params", c.precision.params}, {"loss_scale_initial", c.precision.loss_scale_initial},
        {"loss_scale_window", c.precision.loss_scale_window}, {"loss_scale_min", c.precision.loss_scale_min},
        {"loss_scale_hysteresis", c.precision.loss_scale_hysteresis}, {"fp8", c.precision.fp8}, {"fp8_recipe", c.precision.fp8_recipe},
        {"fp8_amax_history", c.precision.fp8_amax_history}, {"fp8_amax_compute", c.precision.fp8_amax_compute},
        {"fp8_margin", c.precision.fp8_margin}, {"fp8_bf16_first_blocks", c.precision.fp8_bf16_first_blocks},
        {"fp8_bf16_last_blocks", c.precision.fp8_bf16_last_blocks}}},
      {"data",
       {{"path", c.data.path}, {"val_path", c.data.val_path}, {"weights", c.data.weights}, {"tokenizer", c.data.tokenizer}, {"format", c.data.format}, {"val_fraction", c.data.val_fraction},
        {"val_every", c.data.val_every}, {"val_batches", c.data.val_batches}}},
      {"checkpoint",
       {{"dir", c.checkpoint.dir}, {"every", c.checkpoint.every}, {"resume", c.checkpoint.resume},
        {"keep", c.checkpoint.keep}, {"resume_from", c.checkpoint.resume_from},
        {"resume_step", c.checkpoint.resume_step}}},
      {"plugins", plugins},
      {"launch",
       {{"nproc_per_node", c.launch.nproc_per_node}, {"master_addr", c.launch.master_addr},
        {"master_port", c.launch.master_port}, {"timeout_s", c.launch.timeout_s}, {"nnodes", c.launch.nnodes},
        {"ranks_per_gpu", c.launch.ranks_per_gpu}}},
  };
}

}  // namespace ptdp
