#include "plugin/config_schema.hpp"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <set>
#include <span>
#include <sstream>
#include <string_view>

#include "plugin/plugin_error.hpp"

namespace ptdp {
namespace {

std::span<const ConfigKeySpec> schema_of(const PluginDescriptor& d) {
  if (!d.config_schema) return {};
  return {d.config_schema, d.config_schema_size};
}

std::string node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::boolean: return "bool";
    case toml::node_type::integer: return "int";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::string: return "string";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

// The value as a user would write it; strings always double-quoted, whatever the input used.
std::string as_toml(const toml::node& node) {
  if (const auto* s = node.as_string()) return "\"" + s->get() + "\"";
  std::ostringstream out;
  node.visit([&](const auto& value) { out << value; });
  return out.str();
}

double as_double(const toml::node& node) {
  return node.is_integer() ? static_cast<double>(node.as_integer()->get())
                           : node.as_floating_point()->get();
}

bool has_choice(const char* choices, std::string_view value) {
  std::string_view rest = choices;
  while (true) {
    const size_t bar = rest.find('|');
    if (rest.substr(0, bar) == value) return true;
    if (bar == std::string_view::npos) return false;
    rest.remove_prefix(bar + 1);
  }
}

// Empty when `value` is acceptable for `spec`.
std::string value_problem(const ConfigKeySpec& spec, const toml::node& value) {
  const bool type_ok = spec.type == ConfigType::Bool     ? value.is_boolean()
                       : spec.type == ConfigType::Int    ? value.is_integer()
                       : spec.type == ConfigType::Float  ? value.is_number()
                                                         : value.is_string();
  if (!type_ok)  // tables and arrays are not shown: they may span lines
    return fmt::format("expected {}, got {}{}", config_type_name(spec.type), node_type_name(value),
                       value.is_value() ? " " + as_toml(value) : "");
  if (spec.type == ConfigType::Int || spec.type == ConfigType::Float) {
    const double x = as_double(value);
    if (!std::isfinite(x)) return fmt::format("{} is not a finite number", as_toml(value));
    if (!(x >= spec.min && x <= spec.max))
      return fmt::format("{} is out of range [{}, {}]", as_toml(value), spec.min, spec.max);
  }
  if (spec.type == ConfigType::String && spec.choices &&
      !has_choice(spec.choices, value.as_string()->get()))
    return fmt::format("{} is not one of {}", as_toml(value), spec.choices);
  return {};
}

// The literal as the only value of a one-key table, or the parser's reason.
toml::table parse_literal(const std::string& literal, std::string& error) {
  try {
    toml::table parsed = toml::parse("value = " + literal);
    if (parsed.size() != 1) error = "is not a single TOML value";
    return parsed;
  } catch (const toml::parse_error& e) {
    error = "is not a TOML literal (" + std::string(e.description()) + ")";
    return {};
  }
}

void copy_into(toml::table& table, const std::string& key, const toml::node& value) {
  value.visit([&](const auto& v) { table.insert_or_assign(key, v); });
}

std::string declared_keys(const PluginDescriptor& d) {
  std::string keys;
  for (const ConfigKeySpec& spec : schema_of(d)) keys += (keys.empty() ? "" : ", ") + std::string(spec.key);
  return keys.empty() ? "it declares no configuration" : "declared: " + keys;
}

}  // namespace

std::string config_schema_problem(const PluginDescriptor& d) {
  if (!d.config_schema && d.config_schema_size > 0)
    return fmt::format("{} keys declared but no table", d.config_schema_size);
  std::set<std::string_view> seen;
  for (const ConfigKeySpec& spec : schema_of(d)) {
    if (!spec.key || !*spec.key) return "an entry has no key";
    const std::string key = spec.key;
    if (!seen.insert(spec.key).second) return "key '" + key + "' declared twice";
    if (spec.type > ConfigType::String)
      return fmt::format("key '{}' has unknown type {}", key, static_cast<uint32_t>(spec.type));
    if ((spec.type == ConfigType::Int || spec.type == ConfigType::Float) && !(spec.min <= spec.max))
      return fmt::format("key '{}' has bounds [{}, {}]", key, spec.min, spec.max);
    if (!spec.default_value) continue;
    std::string error;
    toml::table parsed = parse_literal(spec.default_value, error);
    if (!error.empty()) return fmt::format("key '{}': default {} {}", key, spec.default_value, error);
    if (std::string problem = value_problem(spec, *parsed.get("value")); !problem.empty())
      return fmt::format("key '{}': default: {}", key, problem);
  }
  return {};
}

toml::table config_defaults(const PluginDescriptor& d) {
  toml::table defaults;
  for (const ConfigKeySpec& spec : schema_of(d)) {
    if (!spec.default_value) continue;
    std::string error;
    toml::table parsed = parse_literal(spec.default_value, error);
    if (!error.empty())
      throw PluginError(fmt::format("plugin '{}': config key '{}': default {} {}", d.name, spec.key,
                                    spec.default_value, error));
    copy_into(defaults, spec.key, *parsed.get("value"));
  }
  return defaults;
}

toml::table validated_plugin_config(const PluginDescriptor& d, const toml::table& options) {
  const std::span<const ConfigKeySpec> schema = schema_of(d);
  for (const auto& [key, value] : options) {
    const auto spec = std::find_if(schema.begin(), schema.end(),
                                   [&](const ConfigKeySpec& s) { return key.str() == s.key; });
    if (spec == schema.end())
      throw PluginError(fmt::format("plugin '{}': unknown config key '{}' ({})", d.name, key.str(),
                                    declared_keys(d)));
    if (std::string problem = value_problem(*spec, value); !problem.empty())
      throw PluginError(fmt::format("plugin '{}': config key '{}': {}", d.name, key.str(), problem));
  }
  const toml::table defaults = config_defaults(d);
  toml::table config;
  for (const ConfigKeySpec& spec : schema) {
    const toml::node* value = options.get(spec.key);
    if (!value) value = defaults.get(spec.key);
    if (!value)
      throw PluginError(fmt::format("plugin '{}': config key '{}' is required ({}{}{})", d.name,
                                    spec.key, config_type_name(spec.type), spec.help ? ": " : "",
                                    spec.help ? spec.help : ""));
    if (spec.type == ConfigType::Float)
      config.insert_or_assign(spec.key, as_double(*value));
    else
      copy_into(config, spec.key, *value);
  }
  return config;
}

}  // namespace ptdp
