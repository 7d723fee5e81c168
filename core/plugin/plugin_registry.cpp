#include "plugin/plugin_registry.hpp"

#include <ptdp/message_text.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "plugin/plugin_library.hpp"
#include "plugin/plugin_slots.hpp"

namespace ptdp {
namespace {

namespace fs = std::filesystem;

std::string normalized_dir(const std::string& dir) {
  fs::path path = fs::absolute(fs::path(dir)).lexically_normal();
  if (!path.has_filename() && path != path.root_path()) path = path.parent_path();
  return path.string();
}

bool names_a_file(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 3 && name_or_path.ends_with(".so"));
}

bool is_plugin_file_name(const std::string& file_name) {
  return file_name.starts_with("libptdp-") && file_name.ends_with(".so") &&
         file_name.size() > std::string("libptdp-.so").size();
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? "(empty search path)" : text;
}

}  // namespace

PluginRegistry::PluginRegistry(std::vector<std::string> search_path)
    : search_path_(std::move(search_path)) {}

std::vector<std::string> PluginRegistry::default_search_path(
    const std::vector<std::string>& manifest_search_path) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& dir) {
    if (dir.empty()) return;
    std::string normal = normalized_dir(dir);
    if (std::find(dirs.begin(), dirs.end(), normal) == dirs.end()) dirs.push_back(std::move(normal));
  };
  for (const std::string& dir : manifest_search_path) add(dir);
  if (const char* env = std::getenv("PTDP_PLUGIN_PATH")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      add(std::string(rest.substr(0, colon)));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // The build tree's layout (bin/ + lib/ptdp/), then the same relative layout of an install
    // moved away from its configured prefix.
    add((exe.parent_path() / ".." / "lib" / "ptdp").string());
#ifdef PTDP_PLUGIN_RELATIVE_INSTALL_DIR
    add((exe.parent_path() / ".." / PTDP_PLUGIN_RELATIVE_INSTALL_DIR).string());
#endif
  }
  add(PTDP_PLUGIN_INSTALL_DIR);
  return dirs;
}

const PluginInfo& PluginRegistry::load(const std::string& name_or_path, PluginKind expected_kind,
                                       const std::string& slot) {
  const std::string who = "plugin '" + excerpt(name_or_path) + "' (" + slot + ")";
  if (name_or_path.empty()) throw PluginError("slot '" + slot + "': no plugin named");
  std::string file;
  // error_code forms: a name or folder too long for the file system is "not found", not an exception.
  std::error_code ec;
  if (names_a_file(name_or_path)) {
    if (!fs::exists(name_or_path, ec))
      throw PluginError(who + ": not found: no file " + excerpt(fs::absolute(name_or_path, ec).string(), 200));
    file = name_or_path;
  } else {
    const std::string file_name = "libptdp-" + name_or_path + ".so";
    for (const std::string& dir : search_path_) {
      if (fs::exists(fs::path(dir) / file_name, ec)) {
        file = (fs::path(dir) / file_name).string();
        break;
      }
    }
    if (file.empty()) throw PluginError(who + ": not found; searched: " + excerpt(joined(search_path_), 300));
  }
  const PluginInfo& plugin = open_plugin_library(file);
  if (plugin.descriptor->kind != expected_kind)
    throw PluginError("plugin " + plugin.path + " is a " + plugin_kind_name(plugin.descriptor->kind) +
                      " plugin, slot '" + slot + "' needs a " + plugin_kind_name(expected_kind));
  return plugin;
}

const PluginInfo& PluginRegistry::load(const std::string& name_or_path, PluginKind expected_kind) {
  return load(name_or_path, expected_kind, plugin_slot(expected_kind).name);
}

std::vector<DiscoveredPlugin> PluginRegistry::discover() {
  std::vector<DiscoveredPlugin> found;
  std::set<fs::path> seen;
  for (const std::string& dir : search_path_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
      if (is_plugin_file_name(entry.path().filename().string())) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      if (!seen.insert(fs::weakly_canonical(file, ec)).second) continue;
      try {
        const PluginInfo& plugin = open_plugin_library(file.string());
        found.push_back({plugin.path, plugin.descriptor, {}});
      } catch (const PluginError& e) {
        found.push_back({file.string(), nullptr, e.what()});
      }
    }
  }
  return found;
}

}  // namespace ptdp
