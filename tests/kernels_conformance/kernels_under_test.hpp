#pragma once
// The LayerKernels plugins a conformance run checks, each with the plugin options it is made
// with: one plugin may be checked several times, once per setting of its options.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "ptdp/layer_kernels.hpp"

namespace ptdp::conformance {

struct KernelsUnderTest {
  std::string name;    // shown in test names: letters, digits and '_' only
  std::string plugin;  // name (from the build's or the installed plugin folder) or path
  toml::table options;

  // A fresh, unbound instance.
  std::shared_ptr<LayerKernels> create() const;
};

// The reference every plugin is compared with: kernels-ref with its defaults.
KernelsUnderTest reference_kernels();

// The entries of PTDP_CONFORMANCE_KERNELS, separated by ';', each NAME_OR_PATH or
// NAME_OR_PATH:KEY=VALUE[,KEY=VALUE...] with TOML values (kernels-fused:attention="unfused"),
// default every kernels plugin the build made (kernels-ref; kernels-fused too on a CUDA build),
// each with its defaults and under the settings kernels_under_test.cpp lists for it.
std::vector<KernelsUnderTest> kernels_under_test();

inline void PrintTo(const KernelsUnderTest& k, std::ostream* out) { *out << k.name; }

}  // namespace ptdp::conformance
