#include "comm_plugin.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "ptdp/error.hpp"

namespace {

class MapConfig final : public ptdp::ConfigView {
 public:
  explicit MapConfig(std::map<std::string, ConfigValue> values) : values_(std::move(values)) {}
  bool has(std::string_view key) const override { return values_.count(std::string(key)) > 0; }
  bool get_bool(std::string_view key) const override { return get<bool>(key); }
  int64_t get_int(std::string_view key) const override { return get<int64_t>(key); }
  double get_float(std::string_view key) const override { return get<double>(key); }
  std::string get_string(std::string_view key) const override { return get<std::string>(key); }
  std::vector<std::string> keys() const override {
    std::vector<std::string> names;
    for (const auto& [name, value] : values_) names.push_back(name);
    return names;
  }

 private:
  template <class T>
  T get(std::string_view key) const {
    const auto found = values_.find(std::string(key));
    if (found == values_.end()) throw ptdp::Error("config: no key '" + std::string(key) + "'");
    if (!std::holds_alternative<T>(found->second))
      throw ptdp::Error("config: key '" + std::string(key) + "' has another type");
    return std::get<T>(found->second);
  }
  std::map<std::string, ConfigValue> values_;
};

ConfigValue parse_default(const ptdp::ConfigKeySpec& spec) {
  const std::string text = spec.default_value;
  switch (spec.type) {
    case ptdp::ConfigType::Bool: return text == "true";
    case ptdp::ConfigType::Int: return static_cast<int64_t>(std::stoll(text));
    case ptdp::ConfigType::Float: return std::stod(text);
    case ptdp::ConfigType::String: return text.size() >= 2 ? text.substr(1, text.size() - 2) : text;
  }
  throw ptdp::Error("config: unknown type of key '" + std::string(spec.key) + "'");
}

void print_log(void* user, ptdp::LogLevel level, const char* message) {
  static const char* names[] = {"debug", "info", "warn", "error"};
  std::fprintf(stderr, "[rank %d] plugin %s: %s\n", *static_cast<const int*>(user),
               names[static_cast<int>(level)], message);
}

// What the host keeps alive for as long as the plugin object lives.
struct HostSide {
  MapConfig config;
  int rank;
  ptdp::PluginContext context;
};

}  // namespace

CommPlugin::CommPlugin(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) throw ptdp::Error("cannot load " + path + ": " + dlerror());
  // Never closed: the plugin owns threads and CUDA state for the life of the process.
  auto entry = reinterpret_cast<ptdp::PluginEntryFn>(dlsym(library, PTDP_PLUGIN_ENTRY_NAME));
  if (!entry) throw ptdp::Error(path + " has no " PTDP_PLUGIN_ENTRY_NAME);
  descriptor_ = entry();
  if (descriptor_->kind != ptdp::PluginKind::Communicator || std::strcmp(descriptor_->name, "comm-nccl") != 0)
    throw ptdp::Error(path + " is not the comm-nccl communicator plugin");
  if (std::strcmp(descriptor_->toolchain, PTDP_TOOLCHAIN) != 0)
    throw ptdp::Error(path + " was built with " + descriptor_->toolchain + ", this program with " PTDP_TOOLCHAIN);
}

std::shared_ptr<ptdp::Communicator> CommPlugin::create(
    int rank, int world_size, const std::map<std::string, ConfigValue>& overrides) const {
  std::map<std::string, ConfigValue> values;
  for (uint32_t i = 0; i < descriptor_->config_schema_size; ++i)
    values[descriptor_->config_schema[i].key] = parse_default(descriptor_->config_schema[i]);
  for (const auto& [key, value] : overrides) {
    const auto slot = values.find(key);
    if (slot == values.end()) throw ptdp::Error("comm-nccl has no config key '" + key + "'");
    if (slot->second.index() != value.index()) throw ptdp::Error("config key '" + key + "' has another type");
    slot->second = value;
  }
  auto host = std::make_unique<HostSide>(HostSide{MapConfig(std::move(values)), rank, {}});
  host->context.config = &host->config;
  host->context.rank = rank;
  host->context.world_size = world_size;
  host->context.log = &print_log;
  host->context.log_user = &host->rank;
  auto* object = static_cast<ptdp::Communicator*>(descriptor_->create(&host->context));
  const ptdp::PluginDescriptor* descriptor = descriptor_;
  return std::shared_ptr<ptdp::Communicator>(
      object, [descriptor, host = std::shared_ptr<HostSide>(std::move(host))](ptdp::Communicator* comm) {
        descriptor->destroy(comm);
      });
}
