#pragma once
// Loads a LayerKernels plugin by path the way the host does (dlopen, the entry symbol, the
// descriptor's create/destroy), with a configuration made from the plugin's own schema defaults
// plus overrides.
#include <dlfcn.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "ptdp/layer_kernels.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp::fused::test {

class SchemaConfig final : public ConfigView {
 public:
  // overrides: key -> TOML literal ("\"unfused\"", "16").
  SchemaConfig(const PluginDescriptor& d, const std::map<std::string, std::string>& overrides) {
    for (uint32_t i = 0; i < d.config_schema_size; ++i) {
      const ConfigKeySpec& k = d.config_schema[i];
      auto o = overrides.find(k.key);
      const char* literal = o != overrides.end() ? o->second.c_str() : k.default_value;
      if (!literal) throw Error(std::string("test config: required key ") + k.key + " has no value");
      values_[k.key] = {k.type, literal};
    }
    for (const auto& [key, literal] : overrides)
      if (!values_.count(key)) throw Error("test config: " + key + " is not in the plugin's schema");
  }
  bool has(std::string_view key) const override { return values_.count(std::string(key)) > 0; }
  bool get_bool(std::string_view key) const override { return literal(key, ConfigType::Bool) == "true"; }
  int64_t get_int(std::string_view key) const override { return std::stoll(literal(key, ConfigType::Int)); }
  double get_float(std::string_view key) const override { return std::stod(literal(key, ConfigType::Float)); }
  std::string get_string(std::string_view key) const override {
    std::string v = literal(key, ConfigType::String);
    return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
  }
  std::vector<std::string> keys() const override {
    std::vector<std::string> k;
    for (const auto& [key, value] : values_) k.push_back(key);
    return k;
  }

 private:
  std::string literal(std::string_view key, ConfigType type) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) throw Error("test config: no key " + std::string(key));
    if (it->second.first != type) throw Error("test config: " + std::string(key) + " is not a " + config_type_name(type));
    return it->second.second;
  }
  std::map<std::string, std::pair<ConfigType, std::string>> values_;
};

// A created LayerKernels object; destroyed through its plugin. The library stays loaded.
class LoadedKernels {
 public:
  LoadedKernels(const std::string& path, const std::map<std::string, std::string>& overrides) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) throw std::runtime_error("cannot load " + path + ": " + dlerror());
    auto entry = reinterpret_cast<PluginEntryFn>(dlsym(library, PTDP_PLUGIN_ENTRY_NAME));
    if (!entry) throw std::runtime_error(path + " has no " PTDP_PLUGIN_ENTRY_NAME);
    descriptor_ = entry();
    if (descriptor_->kind != PluginKind::LayerKernels)
      throw std::runtime_error(path + " is not a kernels plugin");
    if (std::string(descriptor_->toolchain) != PTDP_TOOLCHAIN)
      throw std::runtime_error(path + " was built with " + descriptor_->toolchain + ", this test with " PTDP_TOOLCHAIN);
    config_ = std::make_unique<SchemaConfig>(*descriptor_, overrides);
    context_.config = config_.get();
    kernels_ = static_cast<LayerKernels*>(descriptor_->create(&context_));
  }
  ~LoadedKernels() {
    if (kernels_) descriptor_->destroy(kernels_);
  }
  LoadedKernels(const LoadedKernels&) = delete;
  LoadedKernels& operator=(const LoadedKernels&) = delete;

  LayerKernels& operator*() const { return *kernels_; }
  LayerKernels* operator->() const { return kernels_; }
  const PluginDescriptor& descriptor() const { return *descriptor_; }

 private:
  const PluginDescriptor* descriptor_ = nullptr;
  std::unique_ptr<SchemaConfig> config_;
  PluginContext context_;
  LayerKernels* kernels_ = nullptr;
};

}  // namespace ptdp::fused::test
