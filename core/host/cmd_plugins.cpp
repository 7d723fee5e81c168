// `ptdp-host plugins [--json] [--path DIR]...`: every plugin on the search path with its kind,
// version, ABI, toolchain, file, what it declares (plugin_declarations.hpp) and configuration
// schema, and every refused file with the reason.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "command_registry.hpp"
#include "plugin/config_schema.hpp"
#include "plugin/plugin_registry.hpp"
#include "plugin_declarations.hpp"

namespace ptdp::host {
namespace {

struct PluginsOptions {
  bool json = false;
  std::vector<std::string> paths;
};

nlohmann::json toml_to_json(const toml::node& node) {
  if (const auto* b = node.as_boolean()) return b->get();
  if (const auto* i = node.as_integer()) return i->get();
  if (const auto* f = node.as_floating_point()) return f->get();
  if (const auto* s = node.as_string()) return s->get();
  return nullptr;
}

std::vector<std::string> split_choices(const char* choices) {
  std::vector<std::string> out;
  std::string_view rest = choices;
  while (true) {
    const size_t bar = rest.find('|');
    out.emplace_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) return out;
    rest.remove_prefix(bar + 1);
  }
}

std::string abi_of(const PluginDescriptor& d) { return fmt::format("{}.{}", PTDP_ABI_MAJOR, d.abi_minor); }

nlohmann::json schema_json(const PluginDescriptor& d) {
  const toml::table defaults = config_defaults(d);
  nlohmann::json keys = nlohmann::json::array();
  for (uint32_t i = 0; i < d.config_schema_size; ++i) {
    const ConfigKeySpec& spec = d.config_schema[i];
    nlohmann::json key = {{"key", spec.key}, {"type", config_type_name(spec.type)},
                          {"required", spec.default_value == nullptr},
                          {"help", spec.help ? spec.help : ""}};
    const toml::node* value = defaults.get(spec.key);
    key["default"] = value ? toml_to_json(*value) : nlohmann::json(nullptr);
    if (spec.type == ConfigType::Int || spec.type == ConfigType::Float) {
      key["min"] = spec.min;
      key["max"] = spec.max;
    }
    if (spec.type == ConfigType::String && spec.choices) key["choices"] = split_choices(spec.choices);
    keys.push_back(std::move(key));
  }
  return keys;
}

void print_text(const std::vector<std::string>& search_path, const std::vector<DiscoveredPlugin>& found,
                const std::map<std::string, std::string>& shadowed_by) {
  std::cout << "search path:\n";
  for (const std::string& dir : search_path)
    std::cout << "  " << dir << (std::filesystem::is_directory(dir) ? "" : " (absent)") << "\n";
  std::cout << "plugins:\n";
  size_t refused = 0;
  for (const DiscoveredPlugin& p : found) {
    if (!p.descriptor) {
      ++refused;
      continue;
    }
    const PluginDescriptor& d = *p.descriptor;
    std::cout << fmt::format("  {} {}  {}  ABI {}  {}\n    {}\n", d.name, d.version,
                             plugin_kind_name(d.kind), abi_of(d), d.toolchain, p.path);
    if (auto it = shadowed_by.find(p.path); it != shadowed_by.end())
      std::cout << "    (shadowed by " << it->second << ")\n";
    const PluginDeclarations declared = plugin_declarations({p.path, p.descriptor});
    for (const std::string& line : declared.lines) std::cout << "    declares: " << line << "\n";
    if (!declared.error.empty()) std::cout << "    declares: unknown, no object with its defaults: " << declared.error << "\n";
    for (uint32_t i = 0; i < d.config_schema_size; ++i) {
      const ConfigKeySpec& spec = d.config_schema[i];
      std::string line = fmt::format("    {} {}", spec.key, config_type_name(spec.type));
      line += spec.default_value ? fmt::format(" default {}", spec.default_value) : " required";
      if (spec.type == ConfigType::Int || spec.type == ConfigType::Float)
        line += fmt::format(" in [{}, {}]", spec.min, spec.max);
      if (spec.type == ConfigType::String && spec.choices) line += fmt::format(" one of {}", spec.choices);
      if (spec.help && *spec.help) line += fmt::format(": {}", spec.help);
      std::cout << line << "\n";
    }
  }
  if (refused == found.size()) std::cout << "  (none)\n";
  if (refused == 0) return;
  std::cout << "refused:\n";
  for (const DiscoveredPlugin& p : found)
    if (!p.descriptor) std::cout << "  " << p.error << "\n";
}

void list_plugins(const PluginsOptions& options) {
  for (const std::string& dir : options.paths)
    if (!std::filesystem::is_directory(dir)) throw Error("plugins: --path " + dir + ": no such directory");
  PluginRegistry registry(PluginRegistry::default_search_path(options.paths));
  const std::vector<DiscoveredPlugin> found = registry.discover();

  // load() takes the first file of a name along the search path; later ones are shadowed.
  std::map<std::string, std::string> first_of_name, shadowed_by;
  for (const DiscoveredPlugin& p : found) {
    const std::string file_name = std::filesystem::path(p.path).filename().string();
    auto [it, first] = first_of_name.emplace(file_name, p.path);
    if (!first) shadowed_by[p.path] = it->second;
  }

  if (!options.json) {
    print_text(registry.search_path(), found, shadowed_by);
    return;
  }
  nlohmann::json doc = {{"search_path", registry.search_path()},
                        {"plugins", nlohmann::json::array()},
                        {"refused", nlohmann::json::array()}};
  for (const DiscoveredPlugin& p : found) {
    if (!p.descriptor) {
      doc["refused"].push_back({{"path", p.path}, {"error", p.error}});
      continue;
    }
    const PluginDescriptor& d = *p.descriptor;
    nlohmann::json plugin = {{"name", d.name}, {"kind", plugin_kind_name(d.kind)},
                             {"version", d.version}, {"abi", abi_of(d)},
                             {"toolchain", d.toolchain}, {"path", p.path},
                             {"config", schema_json(d)}};
    if (auto it = shadowed_by.find(p.path); it != shadowed_by.end()) plugin["shadowed_by"] = it->second;
    const PluginDeclarations declared = plugin_declarations({p.path, p.descriptor});
    if (!declared.error.empty()) plugin["declares"] = {{"error", declared.error}};
    else if (!declared.json.empty()) plugin["declares"] = declared.json;
    doc["plugins"].push_back(std::move(plugin));
  }
  std::cout << doc.dump(2) << "\n";
}

const RegisterHostCommand register_plugins{HostCommand{"plugins", 40, [](CLI::App& root) {
  auto options = std::make_shared<PluginsOptions>();
  CLI::App* command = root.add_subcommand(
      "plugins", "List every plugin found, with kind, version, ABI, path, what it declares and config schema");
  command->add_flag("--json", options->json, "Print one JSON document");
  command->add_option("--path", options->paths,
                      "Folder searched first, before PTDP_PLUGIN_PATH and the install's plugin dir (repeatable)");
  command->callback([options] { list_plugins(*options); });
}}};

}  // namespace
}  // namespace ptdp::host
