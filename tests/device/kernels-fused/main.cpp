// kernels-fused device checks: needs a CUDA GPU, so it is not part of ctest. Usage:
//   kernels-fused-device-checks <plugin dir> [kernels|attention|plugins ...]
// The plugin dir holds libptdp-kernels-fused.so and libptdp-kernels-ref.so. One PASS/FAIL line
// per check; the exit status is non-zero when any check failed.
#include <cstdio>
#include <set>
#include <string>

#include "device_checks.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <plugin dir> [kernels|attention|plugins ...]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::set<std::string> groups;
  for (int i = 2; i < argc; ++i) groups.insert(argv[i]);
  for (const auto& g : groups)
    if (g != "kernels" && g != "attention" && g != "plugins") {
      std::fprintf(stderr, "unknown check group '%s' (kernels, attention, plugins)\n", g.c_str());
      return 2;
    }
  auto wanted = [&](const char* g) { return groups.empty() || groups.count(g) > 0; };
  ptdp::fused::test::Checks checks;
  if (wanted("kernels")) ptdp::fused::test::run_kernel_checks(checks);
  if (wanted("attention")) ptdp::fused::test::run_attention_checks(checks);
  if (wanted("plugins")) ptdp::fused::test::run_plugin_checks(checks, dir);
  std::printf("%s: %d passed, %d failed\n", checks.failed() ? "FAIL" : "PASS", checks.passed(), checks.failed());
  return checks.failed() ? 1 : 0;
}
