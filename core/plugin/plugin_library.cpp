#include "plugin/plugin_library.hpp"

#include <dlfcn.h>

#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "plugin/config_schema.hpp"

namespace ptdp {
namespace {

namespace fs = std::filesystem;

struct OpenedLibrary {
  boost::dll::shared_library library;
  PluginInfo info{};
  std::string error;  // non-empty: the file loaded but its plugin was refused
};

// Deliberately leaked: destroying it at exit would unload plugins whose threads may still run.
std::map<std::string, std::unique_ptr<OpenedLibrary>>& opened_libraries() {
  static auto* table = new std::map<std::string, std::unique_ptr<OpenedLibrary>>;
  return *table;
}

std::mutex& opened_libraries_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

// dlerror() repeats the file name; the message already leads with it.
std::string load_failure(const std::string& path, const std::error_code& ec) {
  const char* reason = dlerror();
  std::string text = reason ? reason : ec.message();
  const std::string prefix = path + ": ";
  if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
  return text;
}

std::string missing_entry_reason(const boost::dll::shared_library& library) {
  std::string reason = std::string("no entry symbol '") + PTDP_PLUGIN_ENTRY_NAME + "'";
  for (int major = 0; major < 100; ++major) {
    if (major == PTDP_ABI_MAJOR) continue;
    const std::string other = "ptdp_plugin_v" + std::to_string(major);
    if (library.has(other))
      return reason + " (found '" + other + "': ABI major " + std::to_string(major) + ", host is " +
             std::to_string(PTDP_ABI_MAJOR) + ")";
  }
  return reason + " (not a ptdp plugin, or built without PTDP_PLUGIN)";
}

// "gcc-12;libstdc++-cxx11abi1" -> "libstdc++-cxx11abi1", "" without one. gcc and clang on Linux
// share the Itanium C++ ABI, so the compiler may differ: what must match is the standard library
// and its ABI (libstdc++'s std::string and std::list changed layout with the cxx11 ABI; libc++ is
// another library whose types are not libstdc++'s).
std::string standard_library_of(const std::string& toolchain) {
  const size_t at = toolchain.find(';');
  return at == std::string::npos ? "" : toolchain.substr(at + 1);
}

// Empty when the descriptor is acceptable to this host.
std::string descriptor_problem(const PluginDescriptor* d) {
  if (!d) return std::string("entry symbol '") + PTDP_PLUGIN_ENTRY_NAME + "' returned no descriptor";
  const std::string host_abi = std::to_string(PTDP_ABI_MAJOR) + "." + std::to_string(PTDP_ABI_MINOR);
  if (d->abi_minor > PTDP_ABI_MINOR)
    return "ABI mismatch: plugin built for ABI " + std::to_string(PTDP_ABI_MAJOR) + "." +
           std::to_string(d->abi_minor) + ", host supports " + host_abi;
  if (d->struct_size < sizeof(PluginDescriptor))
    return "ABI mismatch: descriptor is " + std::to_string(d->struct_size) +
           " bytes, host (ABI " + host_abi + ") needs at least " +
           std::to_string(sizeof(PluginDescriptor));
  if (d->kind < PluginKind::Communicator || d->kind > PluginKind::DeviceProfiler)
    return "unknown plugin kind " + std::to_string(static_cast<uint32_t>(d->kind));
  // CheckpointStore gained open_existing, remove_step, discard_unfinished and available_bytes in 1.1; an older
  // store's objects have no such functions, so calling them would jump through a missing slot.
  if (d->kind == PluginKind::CheckpointStore && d->abi_minor < 1)
    return "ABI mismatch: checkpoint plugin built for ABI " + std::to_string(PTDP_ABI_MAJOR) + "." +
           std::to_string(d->abi_minor) + ", a checkpoint store needs 1.1 or later (rebuild it against this SDK)";
  // HeadLayer gained logits in 1.2 (generation), LayerKernels place_parameters in 1.3, the side
  // stream in 1.4 and set_weights in 1.5; an older kernels plugin has no such slots.
  if (d->kind == PluginKind::LayerKernels && d->abi_minor < 5)
    return "ABI mismatch: kernels plugin built for ABI " + std::to_string(PTDP_ABI_MAJOR) + "." +
           std::to_string(d->abi_minor) + ", a kernels plugin needs 1.5 or later (rebuild it against this SDK)";
  const std::string toolchain = d->toolchain ? d->toolchain : "";
  const std::string stdlib = standard_library_of(toolchain), host_stdlib = standard_library_of(PTDP_TOOLCHAIN);
  if (stdlib.empty() || stdlib != host_stdlib)
    return "toolchain mismatch: plugin built with '" + toolchain + "', host with '" + PTDP_TOOLCHAIN +
           "': C++ objects cross the plugin boundary, so both must use one standard library ABI; rebuild the "
           "plugin against " + host_stdlib + " (gcc, or clang without -stdlib=libc++; any compiler version)";
  if (!d->name || !*d->name) return "descriptor has no name";
  if (!d->version) return "descriptor has no version";
  if (!d->create || !d->destroy) return "descriptor lacks create() or destroy()";
  if (std::string problem = config_schema_problem(*d); !problem.empty())
    return "bad config schema: " + problem;
  return {};
}

const PluginDescriptor* call_entry(const boost::dll::shared_library& library, std::string& error) {
  try {
    return library.get<const PluginDescriptor*()>(PTDP_PLUGIN_ENTRY_NAME)();
  } catch (const std::exception& e) {
    error = std::string("entry symbol '") + PTDP_PLUGIN_ENTRY_NAME + "' threw: " + e.what();
  } catch (...) {
    error = std::string("entry symbol '") + PTDP_PLUGIN_ENTRY_NAME + "' threw an unknown exception";
  }
  return nullptr;
}

}  // namespace

const PluginInfo& open_plugin_library(const std::string& file) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(file, ec);
  if (ec) throw PluginError("plugin " + file + ": not found: " + ec.message());
  const std::string path = canonical.string();

  std::lock_guard lock(opened_libraries_mutex());
  auto& table = opened_libraries();
  auto found = table.find(path);
  if (found == table.end()) {
    auto opened = std::make_unique<OpenedLibrary>();
    opened->library.load(canonical,
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    if (ec) throw PluginError("plugin " + path + ": cannot load: " + load_failure(path, ec));
    opened->info.path = path;
    if (!opened->library.has(PTDP_PLUGIN_ENTRY_NAME)) {
      opened->error = missing_entry_reason(opened->library);
    } else {
      const PluginDescriptor* descriptor = call_entry(opened->library, opened->error);
      if (opened->error.empty()) opened->error = descriptor_problem(descriptor);
      if (opened->error.empty()) opened->info.descriptor = descriptor;
    }
    found = table.emplace(path, std::move(opened)).first;
  }
  if (!found->second->error.empty())
    throw PluginError("plugin " + path + ": " + found->second->error);
  return found->second->info;
}

}  // namespace ptdp
