// The built libptdp-comm-ucx.so as the host sees it: its entry symbol, descriptor and schema,
// and a communicator made through create() that reads its configuration.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "launch/tcp_store.hpp"
#include "ptdp/communicator.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp {
namespace {

const PluginDescriptor* load_descriptor() {
  const std::string path = std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-comm-ucx.so";
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) return nullptr;  // never closed: plugins stay loaded for the process
  auto entry = reinterpret_cast<PluginEntryFn>(::dlsym(library, PTDP_PLUGIN_ENTRY_NAME));
  return entry ? entry() : nullptr;
}

// A validated table as the host would hand it over.
class TableView final : public ConfigView {
 public:
  explicit TableView(std::map<std::string, std::string> strings, std::map<std::string, double> floats)
      : strings_(std::move(strings)), floats_(std::move(floats)) {}
  bool has(std::string_view key) const override {
    return strings_.count(std::string(key)) || floats_.count(std::string(key));
  }
  bool get_bool(std::string_view key) const override { throw Error("no bool " + std::string(key)); }
  int64_t get_int(std::string_view key) const override { throw Error("no int " + std::string(key)); }
  double get_float(std::string_view key) const override { return floats_.at(std::string(key)); }
  std::string get_string(std::string_view key) const override { return strings_.at(std::string(key)); }
  std::vector<std::string> keys() const override { return {}; }

 private:
  std::map<std::string, std::string> strings_;
  std::map<std::string, double> floats_;
};

TEST(CommUcxPlugin, DescriptorDeclaresACommunicatorAndItsSchema) {
  const PluginDescriptor* d = load_descriptor();
  ASSERT_NE(d, nullptr) << ::dlerror();
  EXPECT_EQ(d->kind, PluginKind::Communicator);
  EXPECT_STREQ(d->name, "comm-ucx");
  EXPECT_EQ(d->abi_minor, static_cast<uint32_t>(PTDP_ABI_MINOR));
  EXPECT_EQ(d->struct_size, sizeof(PluginDescriptor));
  EXPECT_STREQ(d->toolchain, PTDP_TOOLCHAIN);
  ASSERT_EQ(d->config_schema_size, 2u);
  std::map<std::string, const ConfigKeySpec*> keys;
  for (uint32_t i = 0; i < d->config_schema_size; ++i) keys[d->config_schema[i].key] = &d->config_schema[i];
  ASSERT_TRUE(keys.count("transports"));
  EXPECT_EQ(keys["transports"]->type, ConfigType::String);
  EXPECT_STREQ(keys["transports"]->default_value, "\"\"");
  ASSERT_TRUE(keys.count("timeout_s"));
  EXPECT_EQ(keys["timeout_s"]->type, ConfigType::Float);
  EXPECT_STREQ(keys["timeout_s"]->default_value, "0");
  EXPECT_EQ(keys["timeout_s"]->min, 0);
}

TEST(CommUcxPlugin, CreatedCommunicatorReadsItsConfiguration) {
  const PluginDescriptor* d = load_descriptor();
  ASSERT_NE(d, nullptr) << ::dlerror();
  TableView config({{"transports", "no-such-transport"}}, {{"timeout_s", 5.0}});
  PluginContext context;
  context.config = &config;
  std::unique_ptr<Communicator, void (*)(void*)> comm(static_cast<Communicator*>(d->create(&context)), d->destroy);
  ASSERT_NE(comm, nullptr);
#ifdef PTDP_UCX_CUDA
  EXPECT_EQ(comm->memory_kinds(), memory_bit(MemoryKind::Host) | memory_bit(MemoryKind::Cuda));
#else
  EXPECT_EQ(comm->memory_kinds(), memory_bit(MemoryKind::Host));
#endif
  EXPECT_EQ(comm->capabilities(), capability_bit(CommCapability::MatchesTags) |
                                      capability_bit(CommCapability::NamesDeadPeer) |
                                      capability_bit(CommCapability::SharesDevice));
  TcpStore store("127.0.0.1", 0, 0, 1, std::chrono::seconds(5));
  try {
    comm->init(CommInit{0, 1, &store, "descriptor-test", 30});
    FAIL() << "init with an unknown transport succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("transports 'no-such-transport'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ptdp
