#include "plugin/toml_config_view.hpp"

#include <gtest/gtest.h>

#include "plugin_test_support.hpp"

namespace ptdp {
namespace {

TomlConfigView view() {
  return TomlConfigView("sched-x", toml::parse("depth = 3\nratio = 0.25\nwhole = 2\nmode = 'naive'\nverbose = true"));
}

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ptdp::Error";
  return {};
}

TEST(TomlConfigView, ReadsEachType) {
  const TomlConfigView config = view();
  EXPECT_EQ(config.get_int("depth"), 3);
  EXPECT_DOUBLE_EQ(config.get_float("ratio"), 0.25);
  EXPECT_DOUBLE_EQ(config.get_float("whole"), 2.0);  // an integer reads as a float
  EXPECT_EQ(config.get_string("mode"), "naive");
  EXPECT_TRUE(config.get_bool("verbose"));
  EXPECT_TRUE(config.has("depth"));
  EXPECT_FALSE(config.has("width"));
  EXPECT_EQ(config.keys(), (std::vector<std::string>{"depth", "mode", "ratio", "verbose", "whole"}));
}

TEST(TomlConfigView, UndeclaredKeyThrows) {
  EXPECT_EQ(error_of([] { view().get_int("width"); }),
            "plugin 'sched-x': config key 'width' is not declared in its schema");
}

TEST(TomlConfigView, WrongTypeThrows) {
  EXPECT_EQ(error_of([] { view().get_int("ratio"); }),
            "plugin 'sched-x': config key 'ratio' is float, asked for int");
  EXPECT_EQ(error_of([] { view().get_string("verbose"); }),
            "plugin 'sched-x': config key 'verbose' is bool, asked for string");
}

}  // namespace
}  // namespace ptdp
