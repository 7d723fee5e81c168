#include "plugin/toml_config_view.hpp"

#include "ptdp/error.hpp"

namespace ptdp {

TomlConfigView::TomlConfigView(std::string plugin, toml::table table)
    : plugin_(std::move(plugin)), table_(std::move(table)) {}

const toml::node& TomlConfigView::at(std::string_view key, ConfigType wanted) const {
  const toml::node* node = table_.get(key);
  if (!node)
    throw Error("plugin '" + plugin_ + "': config key '" + std::string(key) +
                "' is not declared in its schema");
  const ConfigType held = node->is_boolean()          ? ConfigType::Bool
                          : node->is_integer()        ? ConfigType::Int
                          : node->is_floating_point() ? ConfigType::Float
                                                      : ConfigType::String;
  // An integer is a fine float; nothing else converts.
  if (held != wanted && !(wanted == ConfigType::Float && held == ConfigType::Int))
    throw Error("plugin '" + plugin_ + "': config key '" + std::string(key) + "' is " +
                config_type_name(held) + ", asked for " + config_type_name(wanted));
  return *node;
}

bool TomlConfigView::has(std::string_view key) const { return table_.contains(key); }

bool TomlConfigView::get_bool(std::string_view key) const { return at(key, ConfigType::Bool).as_boolean()->get(); }

int64_t TomlConfigView::get_int(std::string_view key) const { return at(key, ConfigType::Int).as_integer()->get(); }

double TomlConfigView::get_float(std::string_view key) const {
  const toml::node& node = at(key, ConfigType::Float);
  return node.is_integer() ? static_cast<double>(node.as_integer()->get())
                           : node.as_floating_point()->get();
}

std::string TomlConfigView::get_string(std::string_view key) const {
  return at(key, ConfigType::String).as_string()->get();
}

std::vector<std::string> TomlConfigView::keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : table_) keys.push_back(std::string(key.str()));
  return keys;
}

}  // namespace ptdp
