// The conformance suite over comm-ucx built in (ptdp-comm-ucx-impl), without the plugin loader.
#include <cstdlib>
#include <string>

#include "communicator_under_test.hpp"
#include "ucx_communicator.hpp"

namespace ptdp::conformance {

int world_size_from_environment(int fallback) {
  const char* v = std::getenv("PTDP_CONFORMANCE_WORLD");
  return v && *v ? std::atoi(v) : fallback;
}

std::vector<CommunicatorUnderTest> communicators_under_test() {
  return {{"comm_ucx", world_size_from_environment(8),
           [] { return std::make_shared<comm_ucx::UcxCommunicator>(comm_ucx::UcxOptions{}); }}};
}

}  // namespace ptdp::conformance
