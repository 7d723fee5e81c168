#include "runtime/device_placement.hpp"

#include <fmt/format.h>

#include <ptdp/communicator.hpp>
#include <ptdp/error.hpp>

namespace ptdp {

Device place_rank(const PlacementRequest& r) {
  if (r.kind == MemoryKind::Host) return Device{MemoryKind::Host, 0};
  if (r.devices_visible < 1)
    throw Error(fmt::format("plugins.kernels '{}' computes on GPUs, but this process sees none "
                            "(check CUDA_VISIBLE_DEVICES and the driver)",
                            r.kernels));
  const int64_t capacity = int64_t{r.devices_visible} * r.ranks_per_gpu;
  if (r.local_world_size > capacity) {
    const int needed = (r.local_world_size + r.devices_visible - 1) / r.devices_visible;
    throw Error(fmt::format("launch: {} ranks on this node but {} GPU{} with launch.ranks_per_gpu = {}: start at "
                            "most {} ranks per node, or set launch.ranks_per_gpu = {} to share GPUs (with a "
                            "communicator that can, such as comm-ucx)",
                            r.local_world_size, r.devices_visible, r.devices_visible == 1 ? "" : "s",
                            r.ranks_per_gpu, capacity, needed));
  }
  check_device_sharing(r);
  return Device{r.kind, r.local_rank / r.ranks_per_gpu};
}

void check_device_sharing(const PlacementRequest& r) {
  const bool shared = r.kind != MemoryKind::Host && r.ranks_per_gpu > 1 && r.local_world_size > 1;
  if (shared && !(r.comm_capabilities & capability_bit(CommCapability::SharesDevice)))
    throw Error(fmt::format("launch.ranks_per_gpu = {} puts several ranks on one GPU, but plugins.communicator '{}' "
                            "cannot share a GPU between ranks (NCCL, for one, refuses two ranks on one GPU); use "
                            "plugins.communicator = \"comm-ucx\", which can, or launch.ranks_per_gpu = 1",
                            r.ranks_per_gpu, r.communicator));
}

void check_memory_pairing(MemoryKind kernels_memory, uint32_t comm_memory_kinds, const std::string& kernels,
                          const std::string& communicator) {
  if (comm_memory_kinds & memory_bit(kernels_memory)) return;
  const char* memory = kernels_memory == MemoryKind::Cuda ? "CUDA" : "host";
  throw Error(fmt::format("plugins.communicator '{}' cannot move {} memory, which plugins.kernels '{}' computes in; "
                          "choose a communicator that moves {} memory",
                          communicator, memory, kernels, memory));
}

}  // namespace ptdp
