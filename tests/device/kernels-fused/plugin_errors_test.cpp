// kernels-fused checks that need no GPU, so ctest runs them everywhere the plugin is built: the
// descriptor, and the one-line errors for a bad configuration, for use before bind(), and for
// bind() arguments that cannot work (all detected before the device is touched).
#include <gtest/gtest.h>

#include <string>

#include "plugin/config_schema.hpp"
#include "plugin_loader.hpp"
#include "support/small_gpt_spec.hpp"

namespace ptdp::fused::test {
namespace {

const std::string kPlugin = std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-kernels-fused.so";

// A group that only answers who it is; bind() must refuse before it would be used.
class NamedGroup final : public Communicator {
 public:
  NamedGroup(int rank, int size, uint32_t kinds = memory_bit(MemoryKind::Cuda)) : rank_(rank), size_(size), kinds_(kinds) {}
  void init(const CommInit&) override {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "tp[test]"; }
  uint32_t memory_kinds() const override { return kinds_; }
  uint32_t capabilities() const override { return 0; }
  std::shared_ptr<Communicator> split(int, int, const std::string&) override { return nullptr; }
  void bind_stream(void*) override { ADD_FAILURE() << "bind_stream on a refused binding"; }
  void all_reduce(Tensor, ReduceOp) override {}
  void reduce_scatter(const Tensor&, Tensor, ReduceOp) override {}
  void all_gather(const Tensor&, Tensor) override {}
  void broadcast(Tensor, int) override {}
  void group_start() override {}
  void group_end() override {}
  void send(const Tensor&, int, int) override {}
  void recv(Tensor, int, int) override {}
  void barrier() override {}
  void abort(const std::string&) override {}

 private:
  int rank_, size_;
  uint32_t kinds_;
};

std::string bind_error(KernelsBinding binding) {
  LoadedKernels kernels(kPlugin, {{"attention", "\"unfused\""}});
  try {
    kernels->bind(binding);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(KernelsFusedPlugin, DescribesItself) {
  LoadedKernels kernels(kPlugin, {{"attention", "\"unfused\""}});
  const PluginDescriptor& d = kernels.descriptor();
  EXPECT_EQ(d.kind, PluginKind::LayerKernels);
  EXPECT_STREQ(d.name, "kernels-fused");
  bool found = false;
  for (uint32_t i = 0; i < d.config_schema_size; ++i) {
    if (std::string(d.config_schema[i].key) != "attention") continue;
    found = true;
    EXPECT_STREQ(d.config_schema[i].choices, "flash|unfused");
    const std::string def = d.config_schema[i].default_value;
    EXPECT_TRUE(def == "\"flash\"" || def == "\"unfused\"") << def;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(kernels->activation_dtype(), DType::BF16);
  EXPECT_EQ(kernels->device().kind, MemoryKind::Cuda);
}

// The schema is the one source of the attention paths: the host refuses another before the
// plugin is made, naming the key and the choices.
TEST(KernelsFusedPlugin, RefusesAnUnknownAttentionPath) {
  LoadedKernels kernels(kPlugin, {{"attention", "\"unfused\""}});
  toml::table options;
  options.insert("attention", "sparse");
  try {
    validated_plugin_config(kernels.descriptor(), options);
    FAIL() << "attention = sparse passed the schema";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("attention"), std::string::npos) << message;
    EXPECT_NE(message.find("sparse"), std::string::npos) << message;
    EXPECT_NE(message.find("flash|unfused"), std::string::npos) << message;
  }
}

// Flash is the default exactly when this build has the cuDNN frontend; without it, asking for
// flash is refused at creation, saying what to do.
TEST(KernelsFusedPlugin, FlashOnlyWithTheCudnnFrontend) {
  std::string default_attention;
  {
    LoadedKernels kernels(kPlugin, {{"attention", "\"unfused\""}});
    const PluginDescriptor& d = kernels.descriptor();
    for (uint32_t i = 0; i < d.config_schema_size; ++i)
      if (std::string(d.config_schema[i].key) == "attention") default_attention = d.config_schema[i].default_value;
  }
  if (default_attention == "\"flash\"") {
    EXPECT_NO_THROW(LoadedKernels(kPlugin, {{"attention", "\"flash\""}}));
    return;
  }
  ASSERT_EQ(default_attention, "\"unfused\"");
  try {
    LoadedKernels kernels(kPlugin, {{"attention", "\"flash\""}});
    FAIL() << "created with attention = flash in a build without the cuDNN frontend";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no cuDNN frontend"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attention = \"unfused\""), std::string::npos) << e.what();
  }
}

TEST(KernelsFusedPlugin, NeedsBindFirst) {
  LoadedKernels kernels(kPlugin, {{"attention", "\"unfused\""}});
  try {
    kernels->allocate({4}, DType::F32);
    FAIL() << "allocate before bind";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bind() must be called"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kernels->make_embedding(), Error);
  EXPECT_THROW(kernels->synchronize(), Error);
}

TEST(KernelsFusedPlugin, RefusesBindingsThatCannotWork) {
  NamedGroup pair0(0, 2), pair1_of_3(1, 3), host_only(0, 2, memory_bit(MemoryKind::Host));
  struct Case {
    const char* what;
    std::function<void(KernelsBinding&)> change;
    const char* expected;
  };
  const Case cases[] = {
      {"no communicator", [&](KernelsBinding& b) { b.tp_size = 2; }, "no communicator"},
      {"heads", [&](KernelsBinding& b) { b.model.heads = 3; b.model.hidden = 63; b.tp_size = 2; b.tp = &pair0; }, "heads 3"},
      {"hidden", [&](KernelsBinding& b) { b.model.hidden = 66; }, "hidden 66"},
      {"ffn", [&](KernelsBinding& b) { b.model.ffn_hidden = 255; b.tp_size = 2; b.tp = &pair0; }, "ffn_hidden 255"},
      {"padded vocab", [&](KernelsBinding& b) { b.model.padded_vocab = 90; }, "padded_vocab 90"},
      {"padded vocab split", [&](KernelsBinding& b) { b.model.padded_vocab = 99; b.tp_size = 2; b.tp = &pair0; }, "padded_vocab 99"},
      {"dropout", [&](KernelsBinding& b) { b.model.dropout = 1.0f; }, "dropout"},
      {"empty model", [&](KernelsBinding& b) { b.model.layers = 0; }, "must be positive"},
      {"rank outside group", [&](KernelsBinding& b) { b.tp_rank = 2; b.tp_size = 2; b.tp = &pair0; }, "tp_rank 2"},
      {"group disagrees", [&](KernelsBinding& b) { b.tp_rank = 1; b.tp_size = 2; b.tp = &pair1_of_3; }, "rank 1 of 3"},
      {"host-only group", [&](KernelsBinding& b) { b.tp_size = 2; b.tp = &host_only; }, "cannot move CUDA memory"},
  };
  for (const Case& c : cases) {
    KernelsBinding binding;
    binding.model = ptdp::test::small_gpt_spec();
    c.change(binding);
    const std::string error = bind_error(binding);
    EXPECT_NE(error.find("kernels-fused: cannot bind"), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
  }
}

}  // namespace
}  // namespace ptdp::fused::test
