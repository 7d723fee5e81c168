// The communicators under test, loaded through the core's plugin registry in each rank process.
// What a plugin declares is read in a short-lived child process too, so that the test process
// itself never initializes a device (CUDA does not survive fork).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "communicator_under_test.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "support/plugins_under_test.hpp"

namespace ptdp::conformance {

namespace {

struct Declared {
  uint32_t memory_kinds = 0;
  uint32_t capabilities = 0;
  char error[512] = {};  // why the plugin could not be made, if it could not
};

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


std::shared_ptr<Communicator> create(const std::string& plugin) {
  PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
  const PluginInfo& info = registry.load(plugin, PluginKind::Communicator, "comm");
  return create_plugin<Communicator>(info, toml::table{});
}

Declared declared_by(const std::string& plugin) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe() failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Declared d;
    try {
      auto comm = create(plugin);
      d.memory_kinds = comm->memory_kinds();
      d.capabilities = comm->capabilities();
    } catch (const std::exception& e) {
      std::snprintf(d.error, sizeof(d.error), "%s", e.what());
    }
    ::_exit(::write(fds[1], &d, sizeof(d)) == static_cast<ssize_t>(sizeof(d)) ? 0 : 1);
  }
  ::close(fds[1]);
  Declared d;
  const ssize_t got = ::read(fds[0], &d, sizeof(d));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof(d)) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("conformance: loading the communicator plugin '" + plugin + "' crashed");
  if (d.error[0]) throw std::runtime_error("conformance: " + std::string(d.error));
  return d;
}

MemoryKind memory_named(const std::string& entry, const std::string& memory, const Declared& d) {
  if (memory == "host") return MemoryKind::Host;
  if (memory == "cuda") return MemoryKind::Cuda;
  if (!memory.empty()) throw std::runtime_error("PTDP_CONFORMANCE_COMM: '" + entry + "': memory must be host or cuda");
  return (d.memory_kinds & memory_bit(MemoryKind::Host)) ? MemoryKind::Host : MemoryKind::Cuda;
}

}  // namespace

int gpus_present() {
  std::error_code ec;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)entry;
    ++count;
  }
  return count;
}

std::vector<CommunicatorUnderTest> communicators_under_test() {
  const char* world = std::getenv("PTDP_CONFORMANCE_WORLD");
  std::vector<CommunicatorUnderTest> out;
  for (const std::string& entry : test::plugins_under_test("PTDP_CONFORMANCE_COMM", ',', PluginKind::Communicator)) {
    const size_t colon = entry.rfind(':');
    const std::string plugin = colon == std::string::npos ? entry : entry.substr(0, colon);
    const std::string memory = colon == std::string::npos ? "" : entry.substr(colon + 1);
    const Declared d = declared_by(plugin);
    CommunicatorUnderTest c;
    c.memory = memory_named(entry, memory, d);
    c.memory_kinds = d.memory_kinds;
    c.capabilities = d.capabilities;
    c.name = test_name(plugin_name(plugin) + (c.memory == MemoryKind::Cuda ? "_cuda" : "_host"));
    if (c.memory == MemoryKind::Cuda && !c.has(CommCapability::SharesDevice)) c.world_size = std::max(1, gpus_present());
    if (c.memory == MemoryKind::Cuda && gpus_present() == 0) c.cannot_run_here = "it moves CUDA memory and this machine has no GPU";
    if (world && *world) c.world_size = std::atoi(world);
    c.create = [plugin] { return create(plugin); };
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ptdp::conformance
