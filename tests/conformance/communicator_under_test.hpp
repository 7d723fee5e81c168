#pragma once
// The communicators a conformance binary checks. Each binary links one definition of
// communicators_under_test(); the suite itself is written once for all of them.
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ptdp/communicator.hpp"

namespace ptdp::conformance {

struct CommunicatorUnderTest {
  std::string name;  // shown in test names: letters, digits and '_' only
  int world_size = 8;
  // Called once in every rank process, before init().
  std::function<std::shared_ptr<Communicator>()> create;
};

std::vector<CommunicatorUnderTest> communicators_under_test();

// How GoogleTest shows the parameter (test names and listings).
inline void PrintTo(const CommunicatorUnderTest& c, std::ostream* out) {
  *out << c.name << ", " << c.world_size << " ranks";
}

// PTDP_CONFORMANCE_WORLD overrides the world size (e.g. the number of GPUs present).
int world_size_from_environment(int fallback);

}  // namespace ptdp::conformance
