#pragma once
// How fast a GEMM of a given size runs on a cluster's GPU, from its efficiency table.
#include "plan/cluster_spec.hpp"

namespace ptdp {

// The fraction of peak a GEMM of `flops` achieves: the table interpolated linearly in
// log(flops), the end rows' values beyond them.
double gemm_efficiency(const ClusterSpec& cluster, double flops);

// Seconds for one GEMM of `flops`.
double gemm_seconds(const ClusterSpec& cluster, double flops);

}  // namespace ptdp
