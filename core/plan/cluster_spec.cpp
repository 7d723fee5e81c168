#include "plan/cluster_spec.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include <toml++/toml.h>

#include "manifest/manifest_loader.hpp"
#include "manifest/manifest_locator.hpp"
#include "manifest/table_reader.hpp"

namespace ptdp {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

// The table reader has no required floats; a float left unset is reported as missing here, after
// the reader has refused unknown keys (a misspelt key is the likely cause of a missing one).
struct RequiredFloats {
  TableReader& reader;
  const ManifestLocator& locator;
  std::vector<std::pair<std::string, double*>> fields;

  void read(std::string_view key, double& out, FloatRange range) {
    out = kUnset;
    reader.read(key, out, range);
    fields.emplace_back(reader.key_path(key), &out);
  }
  void finish() {
    reader.finish();
    for (const auto& [key, value] : fields)
      if (std::isnan(*value)) locator.fail(key, "required key is missing");
  }
};

std::vector<GemmEfficiencyPoint> read_gemm_table(const toml::table* gpu, const ManifestLocator& locator) {
  const std::string key = "gpu.gemm_efficiency";
  const toml::node* node = gpu ? gpu->get("gemm_efficiency") : nullptr;
  const toml::array* rows = node ? node->as_array() : nullptr;
  if (!rows || rows->empty())
    locator.fail(key, "required: an array of tables { flops = ..., efficiency = ... }, at least one row");
  std::vector<GemmEfficiencyPoint> table;
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string row_key = fmt::format("{}[{}]", key, i);
    const toml::table* row = rows->get(i)->as_table();
    if (!row) locator.fail(row_key, "expected a table { flops = ..., efficiency = ... }", &rows->get(i)->source());
    TableReader reader(locator, row_key, row);
    GemmEfficiencyPoint point;
    RequiredFloats required{reader, locator, {}};
    required.read("flops", point.flops, FloatRange::above(0));
    required.read("efficiency", point.efficiency, {0, 1, false, true});
    required.finish();
    if (!table.empty() && point.flops <= table.back().flops)
      locator.fail(row_key + ".flops", fmt::format("rows must be in ascending flops (got {:g} after {:g})", point.flops,
                                                   table.back().flops),
                   &row->source());
    table.push_back(point);
  }
  return table;
}

LinkSpec read_link(const ManifestLocator& locator, const std::string& name, const toml::table* table) {
  TableReader reader(locator, name, table);
  RequiredFloats required{reader, locator, {}};
  double gb_per_s = 0, latency_us = 0;
  required.read("bandwidth_gb_per_s", gb_per_s, FloatRange::above(0));
  required.read("latency_us", latency_us, FloatRange::at_least(0));
  required.finish();
  return {gb_per_s * 1e9, latency_us * 1e-6};
}

ClusterSpec parse(const std::string& text, const std::string& source) {
  const toml::table root = parse_config_text(text, source);
  ManifestLocator locator(source, root);
  ClusterSpec c;
  c.source = source;

  TableReader top(locator, "", &root);
  top.read("name", c.name);
  const toml::table* node = top.read_table("node");
  const toml::table* gpu = top.read_table("gpu");
  const toml::table* intra = top.read_table("intra_node");
  const toml::table* inter = top.read_table("inter_node");
  const toml::table* kernels = top.read_table("kernels");
  top.finish();

  TableReader node_reader(locator, "node", node);
  node_reader.read("gpus", c.gpus_per_node, 1, 1024, Presence::required);
  node_reader.finish();

  // The GEMM table is an array of tables, which the table reader does not read; it checks the rest.
  toml::table gpu_scalars = gpu ? *gpu : toml::table{};
  gpu_scalars.erase("gemm_efficiency");
  TableReader gpu_reader(locator, "gpu", gpu ? &gpu_scalars : nullptr);
  RequiredFloats gpu_floats{gpu_reader, locator, {}};
  double memory_gib = 0, workspace_gib = 0, peak_tflops = 0, hbm_tb_per_s = 0;
  // Bounds far beyond any device, so that a mistyped exponent is refused instead of planned with.
  gpu_floats.read("memory_gib", memory_gib, FloatRange::up_to(0, 1e6));
  gpu_floats.read("workspace_gib", workspace_gib, FloatRange{0, 1e6, true, true});
  gpu_floats.read("peak_tflops", peak_tflops, FloatRange::up_to(0, 1e6));
  gpu_floats.read("hbm_tb_per_s", hbm_tb_per_s, FloatRange::up_to(0, 1e4));
  gpu_floats.finish();
  c.gemm_efficiency = read_gemm_table(gpu, locator);
  c.memory_bytes = memory_gib * kGiB;
  c.workspace_bytes = workspace_gib * kGiB;
  c.peak_flops = peak_tflops * 1e12;
  c.hbm_bytes_per_s = hbm_tb_per_s * 1e12;
  if (c.workspace_bytes >= c.memory_bytes)
    locator.fail("gpu.workspace_gib", fmt::format("must be less than gpu.memory_gib ({:g})", memory_gib));

  c.intra_node = read_link(locator, "intra_node", intra);
  c.inter_node = read_link(locator, "inter_node", inter);

  TableReader kernel_reader(locator, "kernels", kernels);
  std::string attention;
  kernel_reader.read("attention", attention, {"flash", "scores_in_memory"});
  kernel_reader.finish();
  if (attention.empty()) locator.fail("kernels.attention", "required key is missing");
  c.attention_scores_in_memory = attention == "scores_in_memory";
  return c;
}

}  // namespace

ClusterSpec load_cluster_string(const std::string& text, const std::string& source_name) {
  return parse(text, source_name);
}

ClusterSpec load_cluster(const std::string& path) { return parse(read_config_file(path, "cluster file"), path); }

}  // namespace ptdp
