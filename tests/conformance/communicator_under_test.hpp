#pragma once
// The communicators a conformance run checks, each with the memory the suite moves through it
// and what it declares beyond the common contract.
#include <cstdint>
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
  MemoryKind memory = MemoryKind::Host;  // where the suite's buffers live
  uint32_t memory_kinds = 0;             // what it declares it moves (memory_bit bits)
  uint32_t capabilities = 0;             // and keeps (CommCapability bits)
  // Called once in every rank process, before init().
  std::function<std::shared_ptr<Communicator>()> create;
  // Why it cannot run on this machine (CUDA memory and no GPU), or empty: its tests are skipped
  // with this reason, so that a CUDA build's suite passes where it is built and fails nowhere.
  std::string cannot_run_here;

  bool has(CommCapability c) const { return (capabilities & capability_bit(c)) != 0; }
};

// The plugins named by PTDP_CONFORMANCE_COMM: comma-separated entries NAME_OR_PATH[:host|:cuda],
// default every communicator the build made (comm-ucx; comm-nccl too on a CUDA build); without a
// memory, host memory when the communicator moves it, else CUDA.
// Names load from the build's plugin folder through the plugin registry, paths as they are.
// Each runs with PTDP_CONFORMANCE_WORLD ranks when set; else 8, or one per GPU for a
// communicator that moves CUDA memory and cannot share a GPU between ranks.
std::vector<CommunicatorUnderTest> communicators_under_test();

// GPUs the NVIDIA driver shows this process (0 without the driver).
int gpus_present();

// How GoogleTest shows the parameter (test names and listings).
inline void PrintTo(const CommunicatorUnderTest& c, std::ostream* out) {
  *out << c.name << ", " << c.world_size << " ranks";
}

}  // namespace ptdp::conformance
