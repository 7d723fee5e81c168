// `ptdp-host plugins`, run as a user would, on the probe plugins.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "plugin_test_support.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp {
namespace {

namespace fs = std::filesystem;
using testing::probe_dir;
using testing::probe_file;

struct HostRun {
  int status;
  std::string output;
};

// Runs ptdp-host with `args`, PTDP_PLUGIN_PATH unset so only the given folders and the build's
// own come into play.
HostRun ptdp_host(const std::string& args) {
  const std::string command = "env -u PTDP_PLUGIN_PATH '" + std::string(PTDP_TEST_HOST) + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

const nlohmann::json* find_by(const nlohmann::json& list, const std::string& field, const std::string& value) {
  for (const nlohmann::json& item : list)
    if (item.at(field) == value) return &item;
  return nullptr;
}

TEST(PluginsCommand, JsonListsPluginsWithSchemaAndRefusals) {
  const HostRun run = ptdp_host("plugins --json --path '" + probe_dir() + "'");
  ASSERT_EQ(run.status, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(run.output);
  EXPECT_EQ(doc.at("search_path").at(0), probe_dir());

  const nlohmann::json* probe = find_by(doc.at("plugins"), "name", "sched-probe");
  ASSERT_NE(probe, nullptr) << run.output;
  EXPECT_EQ(probe->at("kind"), "scheduler");
  EXPECT_EQ(probe->at("version"), "2.1.0");
  EXPECT_EQ(probe->at("abi"), testing::kHostAbi);
  EXPECT_EQ(probe->at("toolchain"), PTDP_TOOLCHAIN);
  EXPECT_EQ(probe->at("path"), probe_file("sched-probe"));
  const nlohmann::json& config = probe->at("config");
  ASSERT_EQ(config.size(), 5u);
  const nlohmann::json* depth = find_by(config, "key", "depth");
  ASSERT_NE(depth, nullptr);
  EXPECT_EQ(depth->at("type"), "int");
  EXPECT_EQ(depth->at("default"), 2);
  EXPECT_EQ(depth->at("min"), 1.0);
  EXPECT_EQ(depth->at("max"), 64.0);
  EXPECT_EQ(depth->at("required"), false);
  EXPECT_EQ(depth->at("help"), "forward ops per stage");
  const nlohmann::json* mode = find_by(config, "key", "mode");
  ASSERT_NE(mode, nullptr);
  EXPECT_EQ(mode->at("default"), "flash");
  EXPECT_EQ(mode->at("choices"), nlohmann::json({"flash", "naive"}));
  EXPECT_FALSE(mode->contains("min"));
  const nlohmann::json* label = find_by(config, "key", "label");
  ASSERT_NE(label, nullptr);
  EXPECT_EQ(label->at("required"), true);
  EXPECT_TRUE(label->at("default").is_null());

  const nlohmann::json* toolchain = find_by(doc.at("refused"), "path", probe_file("broken-toolchain"));
  ASSERT_NE(toolchain, nullptr) << run.output;
  EXPECT_CONTAINS(toolchain->at("error").get<std::string>(), "toolchain mismatch: plugin built with 'othercc-3'");
  EXPECT_NE(find_by(doc.at("refused"), "path", probe_file("broken-not-elf")), nullptr);
  // The stock plugins of the build are listed too; count only the probe folder's files.
  size_t probes = 0;
  for (const char* list : {"plugins", "refused"})
    for (const auto& entry : doc.at(list))
      if (entry.at("path").get<std::string>().rfind(probe_dir(), 0) == 0) ++probes;
  EXPECT_EQ(probes, 14u) << run.output;
}

TEST(PluginsCommand, EarlierFolderShadowsSameName) {
  const fs::path first = fs::path(::testing::TempDir()) / "ptdp-plugins-shadow";
  fs::remove_all(first);
  fs::create_directories(first);
  fs::copy_file(probe_file("sched-probe"), first / "libptdp-sched-probe.so");
  const HostRun run = ptdp_host("plugins --json --path '" + first.string() + "' --path '" + probe_dir() + "'");
  fs::remove_all(first);
  ASSERT_EQ(run.status, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(run.output);
  const nlohmann::json* shadowed = find_by(doc.at("plugins"), "path", probe_file("sched-probe"));
  ASSERT_NE(shadowed, nullptr) << run.output;
  EXPECT_EQ(shadowed->at("shadowed_by"), (fs::canonical(fs::path(::testing::TempDir())) / "ptdp-plugins-shadow" / "libptdp-sched-probe.so").string());
}

TEST(PluginsCommand, TextListsPluginsAndRefusals) {
  const HostRun run = ptdp_host("plugins --path '" + probe_dir() + "'");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_CONTAINS(run.output, "  sched-probe 2.1.0  scheduler  ABI " + testing::kHostAbi + "  " PTDP_TOOLCHAIN "\n    " +
                                  probe_file("sched-probe"));
  EXPECT_CONTAINS(run.output, "    depth int default 2 in [1, 64]: forward ops per stage\n");
  EXPECT_CONTAINS(run.output, "    mode string default \"flash\" one of flash|naive: how to run\n");
  EXPECT_CONTAINS(run.output, "    label string required: a name for the run\n");
  EXPECT_CONTAINS(run.output, "refused:\n");
  EXPECT_CONTAINS(run.output, "  plugin " + probe_file("broken-abi-minor") + ": ABI mismatch");
}

// What the core pairs plugins by, as each plugin declares it: the build's comm-ucx and kernels-ref.
TEST(PluginsCommand, ShowsWhatCommunicatorsAndKernelsDeclare) {
  const HostRun run = ptdp_host("plugins --json --path '" + probe_dir() + "'");
  ASSERT_EQ(run.status, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(run.output);
  const nlohmann::json* ucx = find_by(doc.at("plugins"), "name", "comm-ucx");
  ASSERT_NE(ucx, nullptr) << run.output;
  const nlohmann::json& comm = ucx->at("declares");
  EXPECT_EQ(comm.at("memory_kinds").at(0), "host");
  EXPECT_EQ(comm.at("capabilities"), nlohmann::json({"matches_tags", "names_dead_peer", "shares_device"}));
  const nlohmann::json* ref = find_by(doc.at("plugins"), "name", "kernels-ref");
  ASSERT_NE(ref, nullptr) << run.output;
  EXPECT_EQ(ref->at("declares"), nlohmann::json({{"device", "host"},
                                                 {"activation", "f32"},
                                                 {"precisions", {"fp8_hybrid", "fp16"}},
                                                 {"activation_memory", {"sequence_parallel", "selective_recompute"}}}));
  const nlohmann::json* probe = find_by(doc.at("plugins"), "name", "sched-probe");
  ASSERT_NE(probe, nullptr) << run.output;
  EXPECT_FALSE(probe->contains("declares"));
  // A plugin whose object is not of the kind it claims crashes when asked; the listing goes on.
  const nlohmann::json* liar = find_by(doc.at("plugins"), "name", "broken-kind");
  ASSERT_NE(liar, nullptr) << run.output;
  EXPECT_CONTAINS(liar->at("declares").at("error").get<std::string>(), "making one crashed");

  const HostRun text = ptdp_host("plugins");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_CONTAINS(text.output, "    declares: computes on host in f32; also runs FP8 hybrid, fp16; activation memory: sequence parallelism, selective recomputation\n");
  EXPECT_CONTAINS(text.output, "memory; tag matching, names a dead peer, shares a device\n");
}

TEST(PluginsCommand, MissingPathFolderIsAnError) {
  const HostRun run = ptdp_host("plugins --path /nonexistent/plugins");
  EXPECT_EQ(run.status, 1);
  EXPECT_CONTAINS(run.output, "plugins: --path /nonexistent/plugins: no such directory");
}

}  // namespace
}  // namespace ptdp
