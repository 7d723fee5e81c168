// Where the core places each rank, and the one-line refusals when a node cannot hold its ranks.
#include <gtest/gtest.h>

#include <ptdp/communicator.hpp>

#include "runtime/device_placement.hpp"

namespace ptdp {
namespace {

const uint32_t kShares = capability_bit(CommCapability::SharesDevice);

PlacementRequest gpu_request(int local_rank, int local_world, int gpus, int ranks_per_gpu, uint32_t caps) {
  PlacementRequest r;
  r.kind = MemoryKind::Cuda;
  r.devices_visible = gpus;
  r.local_rank = local_rank;
  r.local_world_size = local_world;
  r.ranks_per_gpu = ranks_per_gpu;
  r.kernels = "kernels-fused";
  r.communicator = "comm-x";
  r.comm_capabilities = caps;
  return r;
}

std::string refusal(const PlacementRequest& r) {
  try {
    place_rank(r);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DevicePlacement, HostBackendsComputeOnTheHostWhateverTheSharingKey) {
  PlacementRequest r;
  r.local_rank = 5;
  r.local_world_size = 8;
  r.ranks_per_gpu = 3;
  const Device d = place_rank(r);
  EXPECT_EQ(d.kind, MemoryKind::Host);
  EXPECT_EQ(d.index, 0);
}

TEST(DevicePlacement, OneRankPerGpuByDefault) {
  for (int rank = 0; rank < 8; ++rank) {
    const Device d = place_rank(gpu_request(rank, 8, 8, 1, 0));
    EXPECT_EQ(d.kind, MemoryKind::Cuda);
    EXPECT_EQ(d.index, rank);
  }
}

TEST(DevicePlacement, ConsecutiveRanksShareAGpu) {
  // 8 ranks on 4 GPUs, two each: ranks 0,1 on GPU 0 (the tensor-parallel neighbours), 2,3 on 1, ...
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(place_rank(gpu_request(rank, 8, 4, 2, kShares)).index, rank / 2);
  // Every rank of the job on one GPU.
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(place_rank(gpu_request(rank, 8, 1, 8, kShares)).index, 0);
}

TEST(DevicePlacement, MoreRanksThanGpusIsRefusedSayingWhatToSet) {
  EXPECT_EQ(refusal(gpu_request(0, 8, 1, 1, kShares)),
            "launch: 8 ranks on this node but 1 GPU with launch.ranks_per_gpu = 1: start at most 1 ranks per node, "
            "or set launch.ranks_per_gpu = 8 to share GPUs (with a communicator that can, such as comm-ucx)");
  EXPECT_NE(refusal(gpu_request(3, 5, 2, 2, kShares)).find("set launch.ranks_per_gpu = 3"), std::string::npos);
}

TEST(DevicePlacement, SharingNeedsACommunicatorThatCanShareAGpu) {
  const std::string message = refusal(gpu_request(0, 2, 1, 2, /*capabilities=*/0));
  EXPECT_EQ(message,
            "launch.ranks_per_gpu = 2 puts several ranks on one GPU, but plugins.communicator 'comm-x' cannot share a "
            "GPU between ranks (NCCL, for one, refuses two ranks on one GPU); use plugins.communicator = \"comm-ucx\", "
            "which can, or launch.ranks_per_gpu = 1");
  // One rank per node shares nothing, so any communicator will do.
  EXPECT_EQ(place_rank(gpu_request(0, 1, 1, 2, 0)).index, 0);
}

TEST(DevicePlacement, NoGpuVisibleIsRefused) {
  EXPECT_EQ(refusal(gpu_request(0, 1, 0, 1, kShares)),
            "plugins.kernels 'kernels-fused' computes on GPUs, but this process sees none (check "
            "CUDA_VISIBLE_DEVICES and the driver)");
}

}  // namespace
}  // namespace ptdp
