#include "device_check_registry.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <map>

namespace ptdp::fused::test {
namespace {

bool cuda_device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// One stream and arena for the whole run, made by the first check that runs.
TestDevice& shared_device() {
  static TestDevice device;
  return device;
}

class DeviceCheckTest : public ::testing::Test {
 public:
  explicit DeviceCheckTest(DeviceCheck body) : body_(std::move(body)) {}
  void TestBody() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
    Checks checks;
    body_(checks, shared_device());
  }

 private:
  DeviceCheck body_;
};

std::string identifier(const std::string& name) {
  std::string id;
  for (char c : name) {
    const bool word = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (word) id += c;
    else if (!id.empty() && id.back() != '_') id += '_';
  }
  while (!id.empty() && id.back() == '_') id.pop_back();
  return id;
}

}  // namespace

void add_device_check(const std::string& suite, const std::string& name, DeviceCheck body) {
  static std::map<std::string, int> registered;
  std::string test = identifier(name);
  if (const int n = ++registered[suite + "." + test]; n > 1) test += "_" + std::to_string(n);
  ::testing::RegisterTest(suite.c_str(), test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [body = std::move(body)]() -> ::testing::Test* { return new DeviceCheckTest(body); });
}

}  // namespace ptdp::fused::test
