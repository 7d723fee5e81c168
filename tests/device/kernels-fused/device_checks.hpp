#pragma once
// The groups of device checks; each records its own PASS/FAIL lines.
#include <string>

#include "check.hpp"

namespace ptdp::fused::test {

void run_kernel_checks(Checks& checks);
void run_attention_checks(Checks& checks);
// plugin_dir holds libptdp-kernels-fused.so and libptdp-kernels-ref.so.
void run_plugin_checks(Checks& checks, const std::string& plugin_dir);

}  // namespace ptdp::fused::test
