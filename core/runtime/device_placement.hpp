#pragma once
// Which device a rank computes on. The core decides it once, before any plugin touches a device,
// and hands the same device to the communicator (CommInit::device) and to the kernels plugin
// (KernelsBinding::device_index); communicator.hpp has the order.
//
// Host backends: every rank computes on the host. Accelerator backends: local rank r computes
// on device r / launch.ranks_per_gpu, so consecutive local ranks (the tensor-parallel
// neighbours, in the tp-dp-pp order) share a GPU when ranks_per_gpu > 1.
#include <cstdint>
#include <string>

#include <ptdp/tensor.hpp>

namespace ptdp {

struct PlacementRequest {
  MemoryKind kind = MemoryKind::Host;  // what the kernels plugin computes on
  int devices_visible = 1;             // devices of that kind this process sees
  int local_rank = 0;
  int local_world_size = 1;            // ranks on this node
  int ranks_per_gpu = 1;               // launch.ranks_per_gpu
  std::string kernels;                 // plugin names, for messages
  std::string communicator;
  uint32_t comm_capabilities = 0;      // Communicator::capabilities()
};

// Throws ptdp::Error with one line saying what to change when the node cannot hold its ranks:
// no device, more local ranks than devices × ranks_per_gpu, or ranks sharing a device over a
// communicator that cannot share one (check_device_sharing).
Device place_rank(const PlacementRequest& request);

// The rules that need no device, from what the plugins declare, so that `validate` and `run`
// refuse before any rank starts: the communicator moves the memory the kernels compute in
// (comm_memory_kinds is Communicator::memory_kinds()), and ranks that share a GPU go over a
// communicator that can share one. Throw ptdp::Error with one line.
void check_memory_pairing(MemoryKind kernels_memory, uint32_t comm_memory_kinds, const std::string& kernels,
                          const std::string& communicator);
void check_device_sharing(const PlacementRequest& request);

}  // namespace ptdp
