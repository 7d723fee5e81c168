// Plugins with one defect each, all from this source: the defect is chosen by the definitions
// CMakeLists.txt passes (entry symbol, descriptor fields, a throwing constructor), so every
// refusal the registry makes has a real shared object that provokes it.
#include <cstddef>

#include <ptdp/sdk.hpp>

#ifndef ENTRY_SYMBOL
#define ENTRY_SYMBOL PTDP_PLUGIN_ENTRY
#endif
#ifndef DESCRIPTOR_ABI_MINOR
#define DESCRIPTOR_ABI_MINOR PTDP_ABI_MINOR
#endif
#ifndef DESCRIPTOR_SIZE
#define DESCRIPTOR_SIZE sizeof(ptdp::PluginDescriptor)
#endif
#ifndef DESCRIPTOR_KIND
#define DESCRIPTOR_KIND ptdp::PluginKind::Scheduler
#endif
#if defined(DESCRIPTOR_COMPILER) || defined(DESCRIPTOR_STDLIB)
#ifndef DESCRIPTOR_COMPILER
#define DESCRIPTOR_COMPILER PTDP_COMPILER_ID
#endif
#ifndef DESCRIPTOR_STDLIB
#define DESCRIPTOR_STDLIB PTDP_STDLIB_ID
#endif
#define DESCRIPTOR_TOOLCHAIN DESCRIPTOR_COMPILER ";" DESCRIPTOR_STDLIB
#endif
#ifndef DESCRIPTOR_TOOLCHAIN
#define DESCRIPTOR_TOOLCHAIN PTDP_TOOLCHAIN
#endif
#ifndef DEPTH_DEFAULT
#define DEPTH_DEFAULT "2"
#endif

namespace {

class IdleScheduler final : public ptdp::Scheduler {
 public:
  explicit IdleScheduler(const ptdp::PluginContext&) {
#ifdef CREATE_THROWS
    throw ptdp::Error("no device 7 on this host");
#endif
  }
  std::vector<ptdp::ComputeOp> stage_ops(const ptdp::ScheduleShape&, int) const override { return {}; }
};

const ptdp::ConfigKeySpec kSchema[] = {
    {"depth", ptdp::ConfigType::Int, DEPTH_DEFAULT, 1, 64, nullptr, "unused"},
};

}  // namespace

#ifndef NO_ENTRY_SYMBOL
PTDP_EXPORT_SYMBOL const ptdp::PluginDescriptor* ENTRY_SYMBOL() {
  static const ptdp::PluginDescriptor descriptor{
      DESCRIPTOR_ABI_MINOR,
      static_cast<uint32_t>(DESCRIPTOR_SIZE),
      DESCRIPTOR_KIND,
      PLUGIN_NAME,
      "0.0.1",
      DESCRIPTOR_TOOLCHAIN,
      kSchema,
      1,
      &ptdp::detail::create_object<ptdp::Scheduler, IdleScheduler>,
      &ptdp::detail::destroy_object<ptdp::Scheduler>};
  return &descriptor;
}
#else
// Exports something, so the library is a valid shared object that merely lacks the entry.
PTDP_EXPORT_SYMBOL int ptdp_not_a_plugin() { return 0; }
#endif
