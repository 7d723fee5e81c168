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

// The link a collective of `ranks` GPUs, `stride` ranks apart, sees: NVLink while the groups of
// its kind tile the nodes (consecutive ranks share a node; a group of 3 on 8-GPU nodes does not). Across nodes NCCL runs one ring per network port,
// so a group with k members in each node moves data at k ports' bandwidth (at most NVLink's);
// the other groups of the same kind use the node's other ports at the same time. A group that
// does not tile the nodes is paced by the node holding the fewest of its members.
LinkSpec group_link(const ClusterSpec& cluster, int ranks, int stride);

}  // namespace ptdp
