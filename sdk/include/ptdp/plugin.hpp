#pragma once
// The plugin boundary. A plugin is a shared object exporting exactly one C symbol,
// `ptdp_plugin_v<ABI major>`, that returns a PluginDescriptor. Everything else in the plugin is
// hidden (-fvisibility=hidden). The descriptor starts with the ABI minor and its own size so
// that later minors can only append fields.
//
// Writing a plugin:
//
//   class MyScheduler final : public ptdp::Scheduler { ... };
//   static const ptdp::ConfigKeySpec kSchema[] = {
//     {"depth", ptdp::ConfigType::Int, "2", 1, 64, nullptr, "how deep"}};
//   PTDP_PLUGIN(ptdp::PluginKind::Scheduler, ptdp::Scheduler, MyScheduler,
//               "my-scheduler", "1.0.0", kSchema)
//
// The implementation class is constructed from `const ptdp::PluginContext&`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptdp/config.hpp"
#include "ptdp/error.hpp"

#define PTDP_ABI_MAJOR 1
#define PTDP_ABI_MINOR 10
#define PTDP_PLUGIN_ENTRY ptdp_plugin_v1
#define PTDP_PLUGIN_ENTRY_NAME "ptdp_plugin_v1"

#if defined(__clang__)
#define PTDP_COMPILER_ID "clang-" PTDP_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define PTDP_COMPILER_ID "gcc-" PTDP_STRINGIFY(__GNUC__)
#else
#define PTDP_COMPILER_ID "unknown"
#endif
#if defined(_LIBCPP_VERSION)
#define PTDP_STDLIB_ID "libc++"
#elif defined(_GLIBCXX_USE_CXX11_ABI)
#define PTDP_STDLIB_ID "libstdc++-cxx11abi" PTDP_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#else
#define PTDP_STDLIB_ID "unknown"
#endif
// C++ objects (std::string, std::vector, shared_ptr, exceptions) cross the boundary, so host and
// plugin must agree on the standard library ABI: the registry compares the part after ';' (the
// compiler may differ, as gcc and clang share the Itanium C++ ABI).
#define PTDP_TOOLCHAIN PTDP_COMPILER_ID ";" PTDP_STDLIB_ID

namespace ptdp {

// DeviceProfiler is no manifest slot's: the core loads it for `run --profile` only.
enum class PluginKind : uint32_t {
  Communicator = 1,
  LayerKernels = 2,
  Scheduler = 3,
  CheckpointStore = 4,
  DeviceProfiler = 5,
};

inline const char* plugin_kind_name(PluginKind k) {
  switch (k) {
    case PluginKind::Communicator: return "communicator";
    case PluginKind::LayerKernels: return "kernels";
    case PluginKind::Scheduler: return "scheduler";
    case PluginKind::CheckpointStore: return "checkpoint";
    case PluginKind::DeviceProfiler: return "profiler";
  }
  return "unknown";
}

enum class LogLevel : int { Debug = 0, Info = 1, Warn = 2, Error = 3 };

// What the host hands to create(). Owned by the host; valid for the plugin object's lifetime.
struct PluginContext {
  uint32_t struct_size = sizeof(PluginContext);
  const ConfigView* config = nullptr;  // the plugin's validated table
  int rank = 0;                        // global rank of this process
  int world_size = 1;
  void (*log)(void* user, LogLevel level, const char* message) = nullptr;
  void* log_user = nullptr;
  // Since ABI 1.2 (a host of an older minor refuses a 1.2 plugin, so these are always set when
  // a plugin reads them): where this process sits on its node, so that a communicator can pick
  // the network interface or GPU near its local rank.
  int local_rank = 0;
  int local_world_size = 1;
  const char* host = "";  // this node's host name

  void write_log(LogLevel level, const std::string& message) const {
    if (log) log(log_user, level, message.c_str());
  }
};

struct PluginDescriptor {
  uint32_t abi_minor;    // PTDP_ABI_MINOR the plugin was built with
  uint32_t struct_size;  // sizeof(PluginDescriptor) the plugin was built with
  PluginKind kind;
  const char* name;
  const char* version;
  const char* toolchain;  // PTDP_TOOLCHAIN of the plugin's build
  const ConfigKeySpec* config_schema;
  uint32_t config_schema_size;
  // Returns the object as a pointer to the interface of `kind` (e.g. ptdp::Scheduler*), cast to
  // void*. Throws ptdp::Error (or another std::exception) when it cannot start.
  void* (*create)(const PluginContext* context);
  void (*destroy)(void* object);
};

using PluginEntryFn = const PluginDescriptor* (*)();

namespace detail {
template <class Interface, class Impl>
void* create_object(const PluginContext* context) {
  Interface* object = new Impl(*context);
  return static_cast<void*>(object);
}
template <class Interface>
void destroy_object(void* object) {
  delete static_cast<Interface*>(object);
}
}  // namespace detail

}  // namespace ptdp

#define PTDP_EXPORT_SYMBOL extern "C" __attribute__((visibility("default")))

// Defines the plugin's entry symbol. SCHEMA is a static array of ConfigKeySpec (or a
// reference to an empty one: use PTDP_PLUGIN_NO_CONFIG).
#define PTDP_PLUGIN(KIND, INTERFACE, IMPL, NAME, VERSION, SCHEMA)                          \
  PTDP_EXPORT_SYMBOL const ::ptdp::PluginDescriptor* PTDP_PLUGIN_ENTRY() {                \
    static const ::ptdp::PluginDescriptor descriptor{                                      \
        PTDP_ABI_MINOR, sizeof(::ptdp::PluginDescriptor), KIND, NAME, VERSION,            \
        PTDP_TOOLCHAIN, SCHEMA, static_cast<uint32_t>(sizeof(SCHEMA) / sizeof(SCHEMA[0])),  \
        &::ptdp::detail::create_object<INTERFACE, IMPL>,                                   \
        &::ptdp::detail::destroy_object<INTERFACE>};                                       \
    return &descriptor;                                                                    \
  }

#define PTDP_PLUGIN_NO_CONFIG(KIND, INTERFACE, IMPL, NAME, VERSION)                      \
  PTDP_EXPORT_SYMBOL const ::ptdp::PluginDescriptor* PTDP_PLUGIN_ENTRY() {                \
    static const ::ptdp::PluginDescriptor descriptor{                                      \
        PTDP_ABI_MINOR, sizeof(::ptdp::PluginDescriptor), KIND, NAME, VERSION,            \
        PTDP_TOOLCHAIN, nullptr, 0u,                                                       \
        &::ptdp::detail::create_object<INTERFACE, IMPL>,                                   \
        &::ptdp::detail::destroy_object<INTERFACE>};                                       \
    return &descriptor;                                                                    \
  }
