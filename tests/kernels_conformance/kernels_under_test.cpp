#include "kernels_under_test.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
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

std::vector<KernelsUnderTest> kernels_under_test() {
  std::vector<KernelsUnderTest> out;
  for (const std::string& entry : test::plugins_under_test("PTDP_CONFORMANCE_KERNELS", ';', PluginKind::LayerKernels)) {
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
