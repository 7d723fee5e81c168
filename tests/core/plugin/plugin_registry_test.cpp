#include "plugin/plugin_registry.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "plugin/plugin_factory.hpp"
#include "plugin_test_support.hpp"

namespace ptdp {
namespace {

namespace fs = std::filesystem;
using testing::probe_dir;
using testing::probe_file;
using testing::refusal;

// The refusal of loading `name_or_path` from the probe folder.
std::string load_refusal(const std::string& name_or_path, PluginKind kind = PluginKind::Scheduler,
                         const std::string& slot = "scheduler") {
  return refusal([&] { PluginRegistry({probe_dir()}).load(name_or_path, kind, slot); });
}

TEST(PluginRegistry, LoadsByExplicitPath) {
  PluginRegistry registry({});
  const PluginInfo& plugin = registry.load(probe_file("sched-probe"), PluginKind::Scheduler, "scheduler");
  ASSERT_NE(plugin.descriptor, nullptr);
  EXPECT_STREQ(plugin.descriptor->name, "sched-probe");
  EXPECT_STREQ(plugin.descriptor->version, "2.1.0");
  EXPECT_EQ(plugin.descriptor->kind, PluginKind::Scheduler);
  EXPECT_EQ(plugin.path, probe_file("sched-probe"));
}

TEST(PluginRegistry, LoadsByNameAlongTheSearchPath) {
  PluginRegistry registry({"/nonexistent/plugins", probe_dir()});
  const PluginInfo& plugin = registry.load("sched-probe", PluginKind::Scheduler, "scheduler");
  EXPECT_EQ(plugin.path, probe_file("sched-probe"));
}

TEST(PluginRegistry, LoadsByNameThroughPtdpPluginPath) {
  ASSERT_EQ(setenv("PTDP_PLUGIN_PATH", ("/nonexistent/a:" + probe_dir()).c_str(), 1), 0);
  const std::vector<std::string> search_path = PluginRegistry::default_search_path();
  unsetenv("PTDP_PLUGIN_PATH");
  ASSERT_GE(search_path.size(), 2u);
  EXPECT_EQ(search_path[0], "/nonexistent/a");
  EXPECT_EQ(search_path[1], probe_dir());
  PluginRegistry registry(search_path);
  EXPECT_EQ(registry.load("sched-probe", PluginKind::Scheduler, "scheduler").path, probe_file("sched-probe"));
}

TEST(PluginRegistry, DefaultSearchPathOrderWithoutDuplicates) {
  ASSERT_EQ(setenv("PTDP_PLUGIN_PATH", "/env/one::/manifest/a/", 1), 0);
  const std::vector<std::string> path = PluginRegistry::default_search_path({"/manifest/a", "/manifest/b/../c"});
  unsetenv("PTDP_PLUGIN_PATH");
  const std::string exe_plugins =
      (fs::read_symlink("/proc/self/exe").parent_path() / ".." / "lib" / "ptdp").lexically_normal().string();
  ASSERT_GE(path.size(), 5u);
  EXPECT_EQ(path[0], "/manifest/a");
  EXPECT_EQ(path[1], "/manifest/c");
  EXPECT_EQ(path[2], "/env/one");
  EXPECT_EQ(path[3], exe_plugins);
  EXPECT_EQ(path.back(), fs::path(PTDP_PLUGIN_INSTALL_DIR).lexically_normal().string());
  for (size_t i = 0; i < path.size(); ++i)
    for (size_t j = i + 1; j < path.size(); ++j) EXPECT_NE(path[i], path[j]);
}

TEST(PluginRegistry, SameLibraryLoadedTwiceIsTheSamePlugin) {
  const PluginInfo& by_path = PluginRegistry({}).load(probe_file("sched-probe"), PluginKind::Scheduler, "scheduler");
  const PluginInfo& by_name = PluginRegistry({probe_dir()}).load("sched-probe", PluginKind::Scheduler, "scheduler");
  const PluginInfo& via_dots =
      PluginRegistry({}).load(probe_dir() + "/../probe-plugins/libptdp-sched-probe.so", PluginKind::Scheduler, "s");
  EXPECT_EQ(&by_path, &by_name);
  EXPECT_EQ(&by_path, &via_dots);
}

TEST(PluginRegistry, NotFoundListsTheSearchPath) {
  PluginRegistry registry({"/a/lib/ptdp", "/b"});
  EXPECT_EQ(refusal([&] { registry.load("sched-foo", PluginKind::Scheduler, "scheduler"); }),
            "plugin 'sched-foo' (scheduler): not found; searched: /a/lib/ptdp, /b");
}

TEST(PluginRegistry, NotFoundByExplicitPathNamesTheFile) {
  EXPECT_EQ(load_refusal("/nonexistent/libptdp-x.so", PluginKind::Communicator, "communicator"),
            "plugin '/nonexistent/libptdp-x.so' (communicator): not found: no file /nonexistent/libptdp-x.so");
}

TEST(PluginRegistry, EmptyNameIsRefused) {
  EXPECT_EQ(load_refusal("", PluginKind::CheckpointStore, "checkpoint"), "slot 'checkpoint': no plugin named");
}

TEST(PluginRegistry, RefusesLibraryWithoutEntrySymbol) {
  EXPECT_EQ(load_refusal("broken-no-entry"),
            "plugin " + probe_file("broken-no-entry") +
                ": no entry symbol 'ptdp_plugin_v1' (not a ptdp plugin, or built without PTDP_PLUGIN)");
}

TEST(PluginRegistry, RefusesOtherAbiMajor) {
  EXPECT_EQ(load_refusal("broken-abi-major"),
            "plugin " + probe_file("broken-abi-major") +
                ": no entry symbol 'ptdp_plugin_v1' (found 'ptdp_plugin_v2': ABI major 2, host is 1)");
}

TEST(PluginRegistry, RefusesNewerAbiMinor) {
  EXPECT_EQ(load_refusal("broken-abi-minor"),
            "plugin " + probe_file("broken-abi-minor") + ": ABI mismatch: plugin built for ABI 1." +
                std::to_string(PTDP_ABI_MINOR + 1) + ", host supports " + testing::kHostAbi);
}

TEST(PluginRegistry, RefusesACheckpointStoreBuiltBeforeItsInterfaceGrew) {
  EXPECT_EQ(load_refusal("broken-old-store", PluginKind::CheckpointStore, "checkpoint"),
            "plugin " + probe_file("broken-old-store") +
                ": ABI mismatch: checkpoint plugin built for ABI 1.0, a checkpoint store needs 1.1 or later "
                "(rebuild it against this SDK)");
}

TEST(PluginRegistry, RefusesAKernelsPluginBuiltBeforeItsInterfaceGrew) {
  EXPECT_EQ(load_refusal("broken-old-kernels", PluginKind::LayerKernels, "kernels"),
            "plugin " + probe_file("broken-old-kernels") +
                ": ABI mismatch: kernels plugin built for ABI 1.4, a kernels plugin needs 1.5 or later "
                "(rebuild it against this SDK)");
}

TEST(PluginRegistry, RefusesTooSmallDescriptor) {
  EXPECT_EQ(load_refusal("broken-struct-size"),
            "plugin " + probe_file("broken-struct-size") + ": ABI mismatch: descriptor is " +
                std::to_string(offsetof(PluginDescriptor, destroy)) + " bytes, host (ABI " + testing::kHostAbi + ") needs at least " +
                std::to_string(sizeof(PluginDescriptor)));
}

TEST(PluginRegistry, RefusesWrongKindForTheSlot) {
  EXPECT_EQ(load_refusal("broken-kind"),
            "plugin " + probe_file("broken-kind") + " is a kernels plugin, slot 'scheduler' needs a scheduler");
  // The same file is fine where a kernels plugin belongs.
  EXPECT_EQ(PluginRegistry({probe_dir()}).load("broken-kind", PluginKind::LayerKernels, "kernels").descriptor->kind,
            PluginKind::LayerKernels);
}

TEST(PluginRegistry, RefusesToolchainMismatchShowingBoth) {
  EXPECT_EQ(load_refusal("broken-toolchain"),
            "plugin " + probe_file("broken-toolchain") + ": toolchain mismatch: plugin built with 'othercc-3', host with '" +
                PTDP_TOOLCHAIN + "': C++ objects cross the plugin boundary, so both must use one standard library ABI; "
                "rebuild the plugin against " PTDP_STDLIB_ID " (gcc, or clang without -stdlib=libc++; any compiler version)");
  EXPECT_CONTAINS(load_refusal("broken-libcxx"), "toolchain mismatch: plugin built with 'clang-14;libc++'");
}

// Another compiler on the same standard library is the same C++ ABI: a descriptor that says so is
// accepted, and so is a real plugin clang built (when clang is there to build it).
TEST(PluginRegistry, AcceptsAnotherCompilerOnTheSameStandardLibrary) {
  EXPECT_STREQ(PluginRegistry({probe_dir()}).load("broken-other-compiler", PluginKind::Scheduler, "scheduler").descriptor->toolchain,
               "othercc-9;" PTDP_STDLIB_ID);
#ifdef PTDP_CLANG_PROBE_DIR
  PluginRegistry registry({PTDP_CLANG_PROBE_DIR});
  const PluginInfo& clang = registry.load("sched-probe", PluginKind::Scheduler, "scheduler");
  ASSERT_NE(clang.descriptor, nullptr);
  EXPECT_EQ(std::string(clang.descriptor->toolchain).rfind("clang-", 0), 0u) << clang.descriptor->toolchain;
  toml::table options;
  options.insert("label", "from-clang");
  // std::string, std::vector and the virtual calls cross between the clang-built plugin and the
  // gcc-built host.
  auto scheduler = create_plugin<Scheduler>(clang, options);
  const std::vector<ComputeOp> ops = scheduler->stage_ops({1, 1, 4}, 0);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1].microbatch, 1);
#else
  GTEST_SKIP() << "no clang++ at configure time to build the probe with (Debian: apt install clang)";
#endif
}

TEST(PluginRegistry, RefusesMalformedSchema) {
  EXPECT_EQ(load_refusal("broken-schema"),
            "plugin " + probe_file("broken-schema") + ": bad config schema: key 'depth': default: 100 is out of range [1, 64]");
}

TEST(PluginRegistry, RefusesFileThatIsNotASharedObject) {
  const std::string message = load_refusal("broken-not-elf");
  EXPECT_EQ(message, "plugin " + probe_file("broken-not-elf") + ": cannot load: invalid ELF header");
}

TEST(PluginRegistry, RefusalIsTheSameEveryTime) {
  const std::string first = load_refusal("broken-abi-minor");
  EXPECT_EQ(load_refusal(probe_file("broken-abi-minor")), first);
}

TEST(PluginRegistry, DiscoverListsLoadedAndRefusedFiles) {
  PluginRegistry registry({probe_dir(), probe_dir() + "/", "/nonexistent/plugins"});
  const std::vector<DiscoveredPlugin> found = registry.discover();
  std::map<std::string, const DiscoveredPlugin*> by_file;
  for (const DiscoveredPlugin& p : found) by_file[fs::path(p.path).filename().string()] = &p;
  EXPECT_EQ(found.size(), by_file.size()) << "a file was listed twice";
  for (const char* ok : {"sched-probe", "broken-create", "broken-kind", "broken-other-compiler"}) {
    const std::string file = std::string("libptdp-") + ok + ".so";
    ASSERT_TRUE(by_file.count(file)) << file;
    ASSERT_NE(by_file[file]->descriptor, nullptr) << by_file[file]->error;
    EXPECT_STREQ(by_file[file]->descriptor->name, ok);
    EXPECT_EQ(by_file[file]->error, "");
  }
  for (const char* bad : {"broken-no-entry", "broken-abi-major", "broken-abi-minor", "broken-struct-size",
                          "broken-toolchain", "broken-schema", "broken-not-elf", "broken-old-store", "broken-old-kernels",
                          "broken-libcxx"}) {
    const std::string file = std::string("libptdp-") + bad + ".so";
    ASSERT_TRUE(by_file.count(file)) << file;
    EXPECT_EQ(by_file[file]->descriptor, nullptr);
    EXPECT_EQ(by_file[file]->error.rfind("plugin " + probe_file(bad) + ": ", 0), 0u) << by_file[file]->error;
  }
  EXPECT_EQ(found.size(), 14u);
}

}  // namespace
}  // namespace ptdp
