// The shared object as the host sees it: one exported entry, a descriptor that says what it is,
// objects created from a validated config, and creation errors surfaced as ptdp::Error.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstring>

#include <ptdp/layer_kernels.hpp>
#include <ptdp/plugin.hpp>

#include "support/map_config_view.hpp"

namespace ptdp::test {
namespace {

const PluginDescriptor* load_descriptor() {
  const std::string path = std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-kernels-ref.so";
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded, as the host does
  if (library == nullptr) throw Error("cannot load " + path + ": " + dlerror());
  auto entry = reinterpret_cast<PluginEntryFn>(dlsym(library, PTDP_PLUGIN_ENTRY_NAME));
  if (entry == nullptr) throw Error(path + " has no " PTDP_PLUGIN_ENTRY_NAME);
  return entry();
}

TEST(KernelsRefPlugin, DescribesItselfAndCreatesWorkingKernels) {
  const PluginDescriptor* d = load_descriptor();
  EXPECT_EQ(d->kind, PluginKind::LayerKernels);
  EXPECT_STREQ(d->name, "kernels-ref");
  EXPECT_EQ(d->abi_minor, uint32_t{PTDP_ABI_MINOR});
  EXPECT_EQ(d->struct_size, sizeof(PluginDescriptor));
  EXPECT_STREQ(d->toolchain, PTDP_TOOLCHAIN);
  ASSERT_EQ(d->config_schema_size, 1u);
  EXPECT_STREQ(d->config_schema[0].key, "threads");
  EXPECT_EQ(d->config_schema[0].type, ConfigType::Int);
  EXPECT_STREQ(d->config_schema[0].default_value, "1");

  MapConfigView config({{"threads", int64_t{1}}});
  PluginContext context;
  context.config = &config;
  auto* kernels = static_cast<LayerKernels*>(d->create(&context));
  ASSERT_NE(kernels, nullptr);
  ModelSpec m;
  m.layers = 1;
  m.hidden = 4;
  m.heads = 1;
  m.seq_len = 2;
  m.vocab = m.padded_vocab = 3;
  m.ffn_hidden = 16;
  m.micro_batch = 1;
  kernels->bind(KernelsBinding{m, 0, 1, nullptr, 0});
  auto embedding = kernels->make_embedding();
  std::vector<int32_t> tokens{2, 1};
  OwnedTensor out = kernels->allocate({2, 1, 4}, DType::F32);
  const ParamRef word = embedding->parameters()[0];
  for (int i = 0; i < 12; ++i) word.master.as<float>()[i] = float(i);
  embedding->forward({0, 0, 0}, Tensor{tokens.data(), DType::I32, {2, 1}, {}}, out.view, false);
  EXPECT_EQ(out.view.as<float>()[0], 8.0f);  // row 2, feature 0 (position embedding is zero)
  EXPECT_EQ(out.view.as<float>()[4], 4.0f);  // row 1
  embedding.reset();
  d->destroy(kernels);
}

TEST(KernelsRefPlugin, CreationErrorsReachTheHost) {
  const PluginDescriptor* d = load_descriptor();
  MapConfigView no_threads({});
  PluginContext context;
  context.config = &no_threads;
  EXPECT_THROW(d->create(&context), Error);
  MapConfigView zero_threads({{"threads", int64_t{0}}});
  context.config = &zero_threads;
  try {
    d->create(&context);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("threads must be at least 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ptdp::test
