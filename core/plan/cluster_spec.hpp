#pragma once
// ClusterSpec: the hardware (and the kernel stack's one property the planner needs) that
// `ptdp-host plan` predicts memory and step time for, read from a cluster file
// (docs/planning.md). Every rate is one actually achieved, not a datasheet peak, except
// peak_flops, which the GEMM efficiency table is a fraction of.
#include <string>
#include <vector>


namespace ptdp {

// One row of the GEMM efficiency table: a GEMM of `flops` floating-point operations runs at
// `efficiency` × peak. Between rows the efficiency is interpolated in log(flops); outside them it
// is the nearest row's.
struct GemmEfficiencyPoint {
  double flops = 0.0;
  double efficiency = 0.0;
};

// A link as NCCL sees it: the bus bandwidth one GPU achieves in a collective or a transfer over
// it, and the fixed time of one operation.
struct LinkSpec {
  double bandwidth_bytes_per_s = 0.0;
  double latency_s = 0.0;
};

struct ClusterSpec {
  std::string source;  // the cluster file, for messages
  std::string name;
  int gpus_per_node = 0;
  double memory_bytes = 0.0;        // what one GPU can allocate
  double workspace_bytes = 0.0;     // held by the CUDA context, library workspaces and the allocator
  double peak_flops = 0.0;          // dense 16-bit tensor-core peak, FLOP/s
  std::vector<GemmEfficiencyPoint> gemm_efficiency;  // ascending in flops
  double hbm_bytes_per_s = 0.0;     // achieved device-memory bandwidth (elementwise kernels, Adam)
  LinkSpec intra_node;              // NVLink / NVSwitch
  LinkSpec inter_node;              // the network, per GPU
  // true: attention scores are written to memory (softmax, dropout, their backward over b·a·s²
  // elements, the paper's kernels); false: flash attention keeps them on chip.
  bool attention_scores_in_memory = false;
};

// Reads and checks a cluster file with the manifest's table reader, so every problem is one
// ManifestError in the manifest's format: "FILE[:LINE:COL]: key: reason".
ClusterSpec load_cluster(const std::string& path);
ClusterSpec load_cluster_string(const std::string& text, const std::string& source_name);

}  // namespace ptdp
