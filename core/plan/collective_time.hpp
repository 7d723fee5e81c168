#pragma once
// Time of NCCL-style ring collectives and transfers over one link: bytes over the link's bus
// bandwidth, times the ring's share of the data each GPU moves, plus the link's fixed latency.
#include "plan/cluster_spec.hpp"

namespace ptdp {

// All-reduce of `bytes` over `ranks` GPUs: 2·(n−1)/n·bytes through each GPU.
double all_reduce_seconds(double bytes, int ranks, const LinkSpec& link);
// Reduce-scatter or all-gather of a `bytes` buffer: (n−1)/n·bytes through each GPU.
double all_gather_seconds(double bytes, int ranks, const LinkSpec& link);
// One point-to-point transfer of `bytes`.
double transfer_seconds(double bytes, const LinkSpec& link);

// The link a group of `ranks` GPUs, `stride` ranks apart, uses: NVLink while the group fits in
// one node (consecutive ranks share a node), the network otherwise.
const LinkSpec& group_link(const ClusterSpec& cluster, int ranks, int stride);

}  // namespace ptdp
