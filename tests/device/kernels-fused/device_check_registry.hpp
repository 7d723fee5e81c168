#pragma once
// The device checks as GoogleTest tests: each check registered here is one test of its suite,
// run with its own Checks reporter and the process's one TestDevice, and skipped where there is
// no CUDA device (so ctest runs the binary on machines without one, where it skips them all).
#include <functional>
#include <string>

#include "test_device.hpp"

namespace ptdp::fused::test {

using DeviceCheck = std::function<void(Checks&, TestDevice&)>;

// Registers the test suite.name, name made an identifier (numbered when it repeats). Call before
// RUN_ALL_TESTS.
void add_device_check(const std::string& suite, const std::string& name, DeviceCheck body);

}  // namespace ptdp::fused::test
