#include "plan/collective_time.hpp"

#include <algorithm>
#include <numeric>

namespace ptdp {

double all_reduce_seconds(double bytes, int ranks, const LinkSpec& link) {
  if (ranks <= 1) return 0;
  return 2.0 * (ranks - 1) / ranks * bytes / link.bandwidth_bytes_per_s + link.latency_s;
}

double all_gather_seconds(double bytes, int ranks, const LinkSpec& link) {
  if (ranks <= 1) return 0;
  return static_cast<double>(ranks - 1) / ranks * bytes / link.bandwidth_bytes_per_s + link.latency_s;
}

double transfer_seconds(double bytes, const LinkSpec& link) {
  return bytes / link.bandwidth_bytes_per_s + link.latency_s;
}

LinkSpec group_link(const ClusterSpec& cluster, int ranks, int stride) {
  // The groups of one kind together fill blocks of ranks·stride consecutive ranks; a group stays
  // inside a node when those blocks tile the nodes. One that does not has, in some node, only
  // gcd(span, node) / stride members: that node's ports set the pace.
  const long span = static_cast<long>(ranks) * stride;
  if (cluster.gpus_per_node % span == 0) return cluster.intra_node;
  const int members_per_node =
      std::clamp(static_cast<int>(std::gcd(span, static_cast<long>(cluster.gpus_per_node)) / stride), 1, ranks);
  return {std::min(cluster.intra_node.bandwidth_bytes_per_s, members_per_node * cluster.inter_node.bandwidth_bytes_per_s),
          cluster.inter_node.latency_s};
}

}  // namespace ptdp
