// The communicators under test, loaded through the core's plugin registry in each rank process
// (never in the test process itself, so that device plugins initialize CUDA after the fork).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "communicator_under_test.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"

namespace ptdp::conformance {

namespace {

// "libptdp-comm-x.so" or "/path/libptdp-comm-x.so" -> "comm-x".
std::string plugin_name(const std::string& name_or_path) {
  std::string name = std::filesystem::path(name_or_path).filename().string();
  if (name.rfind("libptdp-", 0) == 0) name = name.substr(8);
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0) name.resize(name.size() - 3);
  return name;
}

std::string test_name(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

int gpus_present() {
  std::error_code ec;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)entry;
    ++count;
  }
  return count;
}

}  // namespace

std::vector<CommunicatorUnderTest> communicators_under_test() {
  const char* listed = std::getenv("PTDP_CONFORMANCE_COMM");
  const char* world = std::getenv("PTDP_CONFORMANCE_WORLD");
  std::stringstream names(listed && *listed ? listed : "comm-ucx");
  std::vector<CommunicatorUnderTest> out;
  for (std::string entry; std::getline(names, entry, ',');) {
    if (entry.empty()) continue;
    CommunicatorUnderTest c;
    const std::string name = plugin_name(entry);
    c.name = test_name(name);
    if (name == "comm-nccl") {
      c.matches_tags = false;
      c.names_dead_peer = false;
      c.world_size = std::max(1, gpus_present());
    }
    if (world && *world) c.world_size = std::atoi(world);
    c.create = [entry] {
      PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
      const PluginInfo& info = registry.load(entry, PluginKind::Communicator, "comm");
      return create_plugin<Communicator>(info, toml::table{}, 0, 1);
    };
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ptdp::conformance
