#pragma once
// Shared by the registry's tests: where the probe plugins are, and how to read a refusal.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "plugin/plugin_error.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp::testing {

// The ABI the host and the probe plugins are built for, as the registry writes it ("1.9").
inline const std::string kHostAbi = std::to_string(PTDP_ABI_MAJOR) + "." + std::to_string(PTDP_ABI_MINOR);

inline std::string probe_dir() {
  return std::filesystem::canonical(PTDP_PROBE_PLUGIN_DIR).string();
}

inline std::string probe_file(const std::string& name) {
  return probe_dir() + "/libptdp-" + name + ".so";
}

// The one-line message of the PluginError `action` throws, or a test failure if it throws none.
inline std::string refusal(const std::function<void()>& action) {
  try {
    action();
  } catch (const PluginError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    return message;
  }
  ADD_FAILURE() << "expected a PluginError";
  return {};
}

#define EXPECT_CONTAINS(text, fragment)                                                   \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos)                          \
      << "expected to find: " << (fragment) << "\n                in: " << (text)

}  // namespace ptdp::testing
