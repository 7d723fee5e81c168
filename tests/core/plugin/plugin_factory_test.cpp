#include "plugin/plugin_factory.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <sstream>

#include "plugin_test_support.hpp"

namespace ptdp {
namespace {

using testing::probe_dir;
using testing::refusal;

const PluginInfo& probe(const std::string& name = "sched-probe") {
  return PluginRegistry({probe_dir()}).load(name, PluginKind::Scheduler, "scheduler");
}

// Routes spdlog's default logger into a string for the test's duration.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

toml::table parse(const std::string& text) { return toml::parse(text); }

std::string config_refusal(const std::string& options) {
  return refusal([&] { create_plugin<Scheduler>(probe(), parse(options)); });
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// A plugin learns its global and local rank and its node's name (to pick a network interface).
TEST(PluginFactory, FillsDefaultsAndPassesRank) {
  CapturedLog log;
  auto scheduler = create_plugin<Scheduler>(probe(), parse("label = 'run-a'"), PluginPlace{3, 8, 1, 4});
  EXPECT_EQ(scheduler->stage_ops({1, 1, 4}, 0).size(), 2u);  // depth defaults to 2
  EXPECT_EQ(log.text(),
            "info [sched-probe] depth=2 ratio=0.500000 mode=flash verbose=false label=run-a rank=3/8 local=1/4 host=" + host_name() + "\n");
}

TEST(PluginFactory, OptionsOverrideDefaults) {
  CapturedLog log;
  auto scheduler =
      create_plugin<Scheduler>(probe(), parse("depth = 5\nratio = 1\nmode = 'naive'\nverbose = true\nlabel = 'b'"));
  EXPECT_EQ(scheduler->stage_ops({1, 1, 4}, 0).size(), 5u);
  EXPECT_CONTAINS(log.text(), "depth=5 ratio=1.000000 mode=naive verbose=true label=b");
}

TEST(PluginFactory, ObjectKeepsItsConfigUntilDestroyedByThePlugin) {
  CapturedLog log;
  auto scheduler = create_plugin<Scheduler>(probe(), parse("label = 'kept'"));
  EXPECT_EQ(log.text().find("released"), std::string::npos);
  std::shared_ptr<Scheduler> alias = scheduler;
  scheduler.reset();
  EXPECT_EQ(log.text().find("released"), std::string::npos);
  alias.reset();
  EXPECT_CONTAINS(log.text(), "info [sched-probe] released label=kept\n");
}

TEST(PluginFactory, RefusesUnknownKeyListingDeclaredOnes) {
  EXPECT_EQ(config_refusal("label = 'x'\ndpeth = 3"),
            "plugin 'sched-probe': unknown config key 'dpeth' (declared: depth, ratio, mode, verbose, label)");
}

TEST(PluginFactory, RefusesWrongType) {
  EXPECT_EQ(config_refusal("label = 'x'\ndepth = '3'"),
            "plugin 'sched-probe': config key 'depth': expected int, got string \"3\"");
  EXPECT_EQ(config_refusal("label = 'x'\nverbose = 1"),
            "plugin 'sched-probe': config key 'verbose': expected bool, got int 1");
  EXPECT_EQ(config_refusal("label = 'x'\nratio = [0.5]"),
            "plugin 'sched-probe': config key 'ratio': expected float, got array");
  EXPECT_EQ(config_refusal("label = 'x'\n[mode]\nfast = true"),
            "plugin 'sched-probe': config key 'mode': expected string, got table");
}

TEST(PluginFactory, RefusesOutOfRange) {
  EXPECT_EQ(config_refusal("label = 'x'\ndepth = 100"),
            "plugin 'sched-probe': config key 'depth': 100 is out of range [1, 64]");
  EXPECT_EQ(config_refusal("label = 'x'\nratio = 1.5"),
            "plugin 'sched-probe': config key 'ratio': 1.5 is out of range [0, 1]");
  EXPECT_EQ(config_refusal("label = 'x'\nratio = nan"),
            "plugin 'sched-probe': config key 'ratio': nan is not a finite number");
  EXPECT_EQ(config_refusal("label = 'x'\nratio = inf"),
            "plugin 'sched-probe': config key 'ratio': inf is not a finite number");
}

TEST(PluginFactory, RefusesValueOutsideChoices) {
  EXPECT_EQ(config_refusal("label = 'x'\nmode = 'fast'"),
            "plugin 'sched-probe': config key 'mode': \"fast\" is not one of flash|naive");
}

TEST(PluginFactory, RefusesMissingRequiredKey) {
  EXPECT_EQ(config_refusal("depth = 3"),
            "plugin 'sched-probe': config key 'label' is required (string: a name for the run)");
}

TEST(PluginFactory, InitFailureCarriesThePluginsMessage) {
  EXPECT_EQ(refusal([] { create_plugin_object(probe("broken-create"), {}); }),
            "plugin 'broken-create': init failed: no device 7 on this host");
}

TEST(PluginFactory, RefusesInterfaceOfAnotherKind) {
  EXPECT_EQ(refusal([] { create_plugin<LayerKernels>(probe(), parse("label = 'x'")); }),
            "plugin " + probe().path + " is a scheduler plugin, not a kernels plugin");
}

}  // namespace
}  // namespace ptdp
