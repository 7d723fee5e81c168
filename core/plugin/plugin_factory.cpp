#include "plugin/plugin_factory.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>

#include "plugin/config_schema.hpp"
#include "plugin/toml_config_view.hpp"

namespace ptdp {
namespace {

// What a plugin object borrows from the host for its whole life.
struct PluginObjectState {
  std::string name;
  TomlConfigView config;
  PluginContext context;
  std::string host;
};

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

void log_to_spdlog(void* user, LogLevel level, const char* message) {
  const auto* name = static_cast<const std::string*>(user);
  const spdlog::level::level_enum spd = level == LogLevel::Debug  ? spdlog::level::debug
                                        : level == LogLevel::Info ? spdlog::level::info
                                        : level == LogLevel::Warn ? spdlog::level::warn
                                                                  : spdlog::level::err;
  spdlog::log(spd, "[{}] {}", *name, message ? message : "");
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

std::shared_ptr<void> create_plugin_object(const PluginInfo& plugin, const toml::table& options,
                                           const PluginPlace& place) {
  const PluginDescriptor& d = *plugin.descriptor;
  auto state = std::make_shared<PluginObjectState>(
      PluginObjectState{d.name, TomlConfigView(d.name, validated_plugin_config(d, options)), {}, host_name()});
  state->context.config = &state->config;
  state->context.rank = place.rank;
  state->context.world_size = place.world_size;
  state->context.local_rank = place.local_rank;
  state->context.local_world_size = place.local_world_size;
  state->context.host = state->host.c_str();
  state->context.log = &log_to_spdlog;
  state->context.log_user = &state->name;

  const std::string failed = "plugin '" + state->name + "': init failed: ";
  void* object = nullptr;
  try {
    object = d.create(&state->context);
  } catch (const std::exception& e) {
    throw PluginError(failed + one_line(e.what()));
  } catch (...) {
    throw PluginError(failed + "unknown exception");
  }
  if (!object) throw PluginError(failed + "create() returned no object");
  return std::shared_ptr<void>(object, [destroy = d.destroy, state](void* p) { destroy(p); });
}

}  // namespace ptdp
