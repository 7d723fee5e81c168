#include "checkpoint/resumed_model.hpp"

#include <fmt/format.h>

#include <ptdp/error.hpp>
#include <ptdp/message_text.hpp>

namespace ptdp {

namespace {

struct ModelKey {
  const char* name;  // under [model]
  double value;      // this run's
  bool is_float;     // compared as the float the kernels use
};

std::string shown(double value, bool is_float) {
  return is_float ? fmt::format("{:g}", value) : fmt::format("{}", static_cast<int64_t>(value));
}

}  // namespace

void check_resumed_model(const RunConfig& config, const nlohmann::json& step_metadata, const std::string& where) {
  if (!step_metadata.is_object()) throw Error(fmt::format("{}: its metadata is damaged: not a JSON object", where));
  const auto saved_config = step_metadata.find("config");
  if (saved_config == step_metadata.end()) return;
  const auto saved_model = saved_config->is_object() ? saved_config->find("model") : saved_config->end();
  if (saved_model == saved_config->end() || !saved_model->is_object())
    throw Error(fmt::format("{}: its metadata is damaged: its manifest (\"config\") has no [model] table", where));
  const RunConfig::Model& m = config.model;
  const ModelKey keys[] = {{"layers", double(m.layers), false},     {"hidden", double(m.hidden), false},
                           {"heads", double(m.heads), false},       {"ffn_hidden", double(m.ffn_hidden), false},
                           {"vocab", double(m.vocab), false},       {"seq_len", double(m.seq_len), false},
                           {"layernorm_eps", double(m.layernorm_eps), true}};
  for (const ModelKey& key : keys) {
    const auto found = saved_model->find(key.name);
    if (found == saved_model->end()) continue;  // saved before the key existed
    if (!found->is_number() || (!key.is_float && !found->is_number_integer()))
      throw Error(fmt::format("{}: its metadata is damaged: model.{} is {}, not a number", where, key.name,
                              excerpt(found->dump(), 40)));
    const double saved = found->get<double>();
    const bool same = key.is_float ? static_cast<float>(saved) == static_cast<float>(key.value) : saved == key.value;
    if (!same)
      throw Error(fmt::format("{} was saved by a model with model.{} = {}, and this run has model.{} = {}: its "
                              "weights would compute another function and the folder would mix steps of two "
                              "models; nothing was changed. Set model.{} = {}, or start in another checkpoint.dir",
                              where, key.name, shown(saved, key.is_float), key.name, shown(key.value, key.is_float),
                              key.name, shown(saved, key.is_float)));
  }
}

}  // namespace ptdp
