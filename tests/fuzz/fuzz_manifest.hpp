#pragma once
// The manifest the fuzz tests start from: the tests' tiny one, with `tables` added, run by this
// build's CPU plugins in one process.
#include <string>

#include "support/tiny_manifest.hpp"

namespace ptdp::fuzz {

inline std::string fuzz_manifest(const std::string& tables) {
  return std::string(test::kTinyManifest) + tables +
         "[plugins]\nkernels = \"kernels-ref\"\nscheduler = \"sched-1f1b\"\nsearch_path = [\"" PTDP_TEST_PLUGIN_DIR
         "\"]\n[launch]\ntimeout_s = 10\n";
}

}  // namespace ptdp::fuzz
