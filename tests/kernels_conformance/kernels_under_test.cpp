#include "kernels_under_test.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "support/plugins_under_test.hpp"

namespace ptdp::conformance {

namespace {

std::string plugin_name(const std::string& name_or_path) {
  std::string name = std::filesystem::path(name_or_path).filename().string();
  if (name.rfind("libptdp-", 0) == 0) name = name.substr(8);
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0) name.resize(name.size() - 3);
  return name;
}

std::string test_name(const std::string& text) {
  std::string name;
  for (char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c));
    if (keep) name += c;
    else if (!name.empty() && name.back() != '_') name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

// "attention=\"unfused\",gemm_epilogues=false" as a TOML table.
toml::table parse_options(const std::string& entry, const std::string& text) {
  std::string document;
  std::stringstream pairs(text);
  for (std::string pair; std::getline(pairs, pair, ',');)
    if (!pair.empty()) document += pair + "\n";
  try {
    return toml::parse(document);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error("PTDP_CONFORMANCE_KERNELS: '" + entry + "': options are not KEY=VALUE with TOML values: " +
                             std::string(e.description()));
  }
}

}  // namespace

std::shared_ptr<LayerKernels> KernelsUnderTest::create() const {
  // The registry keeps what it loaded; one per process serves every instance. The build's plugin
  // folder, then lib/ptdp beside this program's bin/ (where scripts/gpu's bundle puts them).
  static PluginRegistry registry(PluginRegistry::default_search_path({PTDP_TEST_PLUGIN_DIR}));
  const PluginInfo& info = registry.load(plugin, PluginKind::LayerKernels, "kernels");
  return create_plugin<LayerKernels>(info, options);
}

KernelsUnderTest reference_kernels() { return KernelsUnderTest{"kernels_ref", "kernels-ref", {}}; }

namespace {

// The settings of its options each built plugin is checked under when PTDP_CONFORMANCE_KERNELS
// names none, beyond its defaults: for kernels-fused, GEMM autotuning and the fusions that are
// off by default; every fusion and autotuning off (and every GEMM offered cuBLASLt's workspace);
// and the unfused attention path. Each setting takes the other path of some kernel, so the suite
// holds both to kernels-ref.
const std::map<std::string, std::vector<std::string>> kSettingsBeyondDefaults = {
    {"kernels-fused",
     {"gemm_autotune=true,one_pass_cross_entropy=true,bias_grad_epilogue=true",
      "gemm_autotune=false,gemm_workspace_scope=\"all\",gelu_epilogue=false,bias_grad_epilogue=false,"
      "fused_layer_norm_backward=false,fused_residual_layer_norm=false,layer_norm_bias_grads=false,"
      "one_pass_cross_entropy=false,first_backward_writes_gradients=false",
      "attention=\"unfused\""}},
};

std::vector<std::string> entries_under_test() {
  std::vector<std::string> entries =
      test::plugins_under_test("PTDP_CONFORMANCE_KERNELS", ';', PluginKind::LayerKernels);
  const char* listed = std::getenv("PTDP_CONFORMANCE_KERNELS");
  if (listed && *listed) return entries;
  std::vector<std::string> expanded;
  for (const std::string& plugin : entries) {
    expanded.push_back(plugin);
    if (auto settings = kSettingsBeyondDefaults.find(plugin); settings != kSettingsBeyondDefaults.end())
      for (const std::string& setting : settings->second) expanded.push_back(plugin + ":" + setting);
  }
  return expanded;
}

}  // namespace

std::vector<KernelsUnderTest> kernels_under_test() {
  std::vector<KernelsUnderTest> out;
  for (const std::string& entry : entries_under_test()) {
    const size_t colon = entry.find(':');
    KernelsUnderTest k;
    k.plugin = entry.substr(0, colon);
    const std::string options = colon == std::string::npos ? "" : entry.substr(colon + 1);
    k.options = parse_options(entry, options);
    k.name = test_name(plugin_name(k.plugin) + (options.empty() ? "" : "_" + options));
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace ptdp::conformance
