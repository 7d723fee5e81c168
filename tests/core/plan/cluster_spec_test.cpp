// Cluster files: the shipped ones load; a bad one is one line naming the file, the key and why.
#include <gtest/gtest.h>

#include <string>

#include "manifest/manifest_loader.hpp"
#include "plan/cluster_spec.hpp"
#include "plan/collective_time.hpp"
#include "plan/gemm_efficiency.hpp"

namespace ptdp {
namespace {

const char* kCluster = R"(name = "test"
[node]
gpus = 8
[gpu]
memory_gib = 80.0
workspace_gib = 1.0
peak_tflops = 300.0
hbm_tb_per_s = 2.0
[[gpu.gemm_efficiency]]
flops = 1.0e9
efficiency = 0.25
[[gpu.gemm_efficiency]]
flops = 1.0e11
efficiency = 0.75
[intra_node]
bandwidth_gb_per_s = 200.0
latency_us = 10.0
[inter_node]
bandwidth_gb_per_s = 20.0
latency_us = 20.0
[kernels]
attention = "flash"
)";

std::string error_of(const std::string& text) {
  try {
    load_cluster_string(text, "c.toml");
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "no error";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

TEST(ClusterSpec, ReadsEveryKeyInItsUnit) {
  const ClusterSpec c = load_cluster_string(kCluster, "c.toml");
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(c.memory_bytes, 80.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(c.peak_flops, 300e12);
  EXPECT_DOUBLE_EQ(c.hbm_bytes_per_s, 2e12);
  EXPECT_DOUBLE_EQ(c.intra_node.bandwidth_bytes_per_s, 200e9);
  EXPECT_DOUBLE_EQ(c.inter_node.latency_s, 20e-6);
  EXPECT_FALSE(c.attention_scores_in_memory);
  // Interpolated in log(flops): 1e10 is halfway between the rows.
  EXPECT_DOUBLE_EQ(gemm_efficiency(c, 1e10), 0.5);
  EXPECT_DOUBLE_EQ(gemm_efficiency(c, 1e6), 0.25);
  EXPECT_DOUBLE_EQ(gemm_efficiency(c, 1e14), 0.75);
}

TEST(ClusterSpec, TheShippedClustersLoad) {
  for (const char* name : {"a100-selene", "h200"}) {
    const ClusterSpec c = load_cluster(std::string(PTDP_SOURCE_DIR) + "/clusters/" + name + ".toml");
    EXPECT_EQ(c.gpus_per_node, 8) << name;
  }
}

TEST(ClusterSpec, BadFilesAreOneLineNamingFileKeyAndReason) {
  EXPECT_EQ(error_of(replaced(kCluster, "memory_gib = 80.0\n", "")), "c.toml:4:2: gpu.memory_gib: required key is missing");
  EXPECT_EQ(error_of(replaced(kCluster, "peak_tflops = 300.0", "peak_tflops = -3")),
            "c.toml:7:1: gpu.peak_tflops: must be in (0, 1000000] (got -3)");
  EXPECT_EQ(error_of(replaced(kCluster, "memory_gib = 80.0", "memory_gib = 1e308")),
            "c.toml:5:1: gpu.memory_gib: must be in (0, 1000000] (got 1e+308)");
  EXPECT_EQ(error_of(replaced(kCluster, "gpus = 8", "gpus = 0")), "c.toml:3:1: node.gpus: must be between 1 and 1024 (got 0)");
  EXPECT_EQ(error_of(replaced(kCluster, "latency_us = 20.0", "latency_us = -1")),
            "c.toml:20:1: inter_node.latency_us: must be >= 0 (got -1)");
  EXPECT_EQ(error_of(replaced(kCluster, "efficiency = 0.75", "efficiency = 1.5")),
            "c.toml:14:1: gpu.gemm_efficiency[1].efficiency: must be in (0, 1] (got 1.5)");
  EXPECT_EQ(error_of(replaced(kCluster, "flops = 1.0e11", "flops = 1.0e8")),
            "c.toml:12:1: gpu.gemm_efficiency[1].flops: rows must be in ascending flops (got 1e+08 after 1e+09)");
  EXPECT_EQ(error_of(replaced(kCluster, "attention = \"flash\"", "attention = \"fast\"")),
            "c.toml:22:1: kernels.attention: must be one of \"flash\", \"scores_in_memory\" (got \"fast\")");
  EXPECT_EQ(error_of(replaced(kCluster, "hbm_tb_per_s", "hbm_tbps")),
            "c.toml:8:1: gpu.hbm_tbps: unknown key (keys of [gpu]: hbm_tb_per_s, memory_gib, peak_tflops, workspace_gib)");
  try {
    load_cluster("/nonexistent/c.toml");
    FAIL();
  } catch (const ManifestError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/c.toml: cannot read cluster file: No such file or directory");
  }
}

// Groups inside a node use NVLink; across nodes one ring per port, paced by the thinnest node.
TEST(ClusterSpec, GroupLinks) {
  const ClusterSpec c = load_cluster_string(kCluster, "c.toml");
  EXPECT_DOUBLE_EQ(group_link(c, 8, 1).bandwidth_bytes_per_s, 200e9);   // tensor 8 in a node
  EXPECT_DOUBLE_EQ(group_link(c, 2, 4).bandwidth_bytes_per_s, 200e9);   // data 2 beside tensor 4
  EXPECT_DOUBLE_EQ(group_link(c, 32, 1).bandwidth_bytes_per_s, 160e9);  // 8 ports of 20 GB/s
  EXPECT_DOUBLE_EQ(group_link(c, 4, 8).bandwidth_bytes_per_s, 20e9);    // one member per node
  EXPECT_DOUBLE_EQ(group_link(c, 3, 1).bandwidth_bytes_per_s, 20e9);    // groups of 3 straddle nodes
  EXPECT_DOUBLE_EQ(group_link(c, 12, 1).bandwidth_bytes_per_s, 80e9);   // 12 = 8 + 4 in the worst node
  EXPECT_DOUBLE_EQ(group_link(c, 12, 1).latency_s, 20e-6);
  EXPECT_DOUBLE_EQ(all_reduce_seconds(1e9, 4, c.intra_node), 2 * 0.75 * 1e9 / 200e9 + 10e-6);
  EXPECT_DOUBLE_EQ(all_reduce_seconds(1e9, 1, c.intra_node), 0);
}

}  // namespace
}  // namespace ptdp
