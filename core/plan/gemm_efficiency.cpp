#include "plan/gemm_efficiency.hpp"

#include <cmath>

namespace ptdp {

double gemm_efficiency(const ClusterSpec& cluster, double flops) {
  const auto& table = cluster.gemm_efficiency;
  if (flops <= table.front().flops) return table.front().efficiency;
  if (flops >= table.back().flops) return table.back().efficiency;
  for (size_t i = 1; i < table.size(); ++i) {
    if (flops > table[i].flops) continue;
    const double x0 = std::log(table[i - 1].flops), x1 = std::log(table[i].flops);
    const double w = (std::log(flops) - x0) / (x1 - x0);
    return table[i - 1].efficiency + w * (table[i].efficiency - table[i - 1].efficiency);
  }
  return table.back().efficiency;
}

double gemm_seconds(const ClusterSpec& cluster, double flops) {
  return flops > 0 ? flops / (cluster.peak_flops * gemm_efficiency(cluster, flops)) : 0.0;
}

}  // namespace ptdp
