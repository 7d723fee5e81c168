#pragma once
// The communicators a conformance run checks, and what each promises beyond the common contract.
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
  // Messages between two ranks are matched by tag (otherwise only in posting order, as NCCL).
  bool matches_tags = true;
  // A collective that fails because a rank died names that rank (NCCL cannot know it).
  bool names_dead_peer = true;
};

// The plugins named by PTDP_CONFORMANCE_COMM (comma-separated names or .so paths; default
// "comm-ucx"), loaded through the plugin registry from the build's plugin folder. Each runs
// with PTDP_CONFORMANCE_WORLD ranks when set, else 8 for host-memory communicators and one per
// GPU for device ones.
std::vector<CommunicatorUnderTest> communicators_under_test();

// How GoogleTest shows the parameter (test names and listings).
inline void PrintTo(const CommunicatorUnderTest& c, std::ostream* out) {
  *out << c.name << ", " << c.world_size << " ranks";
}

}  // namespace ptdp::conformance
