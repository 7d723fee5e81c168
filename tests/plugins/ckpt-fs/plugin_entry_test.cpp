// The built libptdp-ckpt-fs.so, loaded the way the host loads it: by its entry symbol.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <map>

#include <ptdp/plugin.hpp>

#include "store_test_support.hpp"

namespace ptdp::ckptfs::test {
namespace {

class BoolConfig final : public ConfigView {
 public:
  explicit BoolConfig(std::map<std::string, bool> values) : values_(std::move(values)) {}
  bool has(std::string_view key) const override { return values_.count(std::string(key)) > 0; }
  bool get_bool(std::string_view key) const override {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) throw Error("no key " + std::string(key));
    return it->second;
  }
  int64_t get_int(std::string_view key) const override { throw Error("no int " + std::string(key)); }
  double get_float(std::string_view key) const override { throw Error("no float " + std::string(key)); }
  std::string get_string(std::string_view key) const override { throw Error("no string " + std::string(key)); }
  std::vector<std::string> keys() const override {
    std::vector<std::string> out;
    for (const auto& [k, v] : values_) out.push_back(k);
    return out;
  }

 private:
  std::map<std::string, bool> values_;
};

TEST(CkptFsPlugin, EntrySymbolDescribesACheckpointStoreThatWorks) {
  const std::string path = std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-ckpt-fs.so";
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  auto entry = reinterpret_cast<PluginEntryFn>(::dlsym(library, PTDP_PLUGIN_ENTRY_NAME));
  ASSERT_NE(entry, nullptr) << ::dlerror();
  const PluginDescriptor* d = entry();
  EXPECT_EQ(d->kind, PluginKind::CheckpointStore);
  EXPECT_STREQ(d->name, "ckpt-fs");
  EXPECT_STREQ(d->toolchain, PTDP_TOOLCHAIN);
  ASSERT_EQ(d->config_schema_size, 1u);
  EXPECT_STREQ(d->config_schema[0].key, "fsync");
  EXPECT_EQ(d->config_schema[0].type, ConfigType::Bool);
  EXPECT_STREQ(d->config_schema[0].default_value, "true");

  ScratchFolder scratch;
  BoolConfig config({{"fsync", false}});
  PluginContext context;
  context.config = &config;
  auto* store = static_cast<CheckpointStore*>(d->create(&context));
  ASSERT_NE(store, nullptr);
  store->open(scratch.path().string());
  const std::vector<int64_t> shape{8, 6};
  const std::vector<float> values = global_values(shape);
  save_layout(*store, 3, "w", shape, values, split(shape, 1, 2));
  EXPECT_EQ(store->list_steps(), std::vector<int64_t>{3});
  EXPECT_EQ(read_part(*store, 3, "w", shape, {{0, 0}, shape}), values);
  EXPECT_THAT(error_of([&] { store->commit(4, 1, "{}"); }), ::testing::HasSubstr("rank 0 of 1 did not finish"));
  d->destroy(store);
}

}  // namespace
}  // namespace ptdp::ckptfs::test
