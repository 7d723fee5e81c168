#pragma once
// A plugin's configuration schema (the ConfigKeySpec table of its descriptor) applied to the
// table the manifest gives it: unknown keys, wrong types, out-of-range values and values outside
// the declared choices are refused; absent keys get their declared defaults.
#include <string>

#include <toml++/toml.h>

#include "ptdp/plugin.hpp"

namespace ptdp {

// Empty when the schema is well formed: keys named and unique, bounds ordered, every default a
// TOML literal of the key's type that passes its own bounds and choices.
std::string config_schema_problem(const PluginDescriptor& descriptor);

// Every declared default, parsed from its TOML literal (required keys are absent). The schema
// must be well formed (config_schema_problem() empty).
toml::table config_defaults(const PluginDescriptor& descriptor);

// `options` checked against the plugin's schema, with every declared key present (defaults
// filled in; integers given for float keys stored as floats). Throws PluginError
// "plugin '<name>': config key '<key>': <reason>".
toml::table validated_plugin_config(const PluginDescriptor& descriptor, const toml::table& options);

}  // namespace ptdp
