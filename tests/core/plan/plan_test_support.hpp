#pragma once
// What the planner's validation tests share: the published points, the two shipped clusters,
// one pipeline simulation over this build's schedulers, and the fastest fitting candidate among
// a set of layouts.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "plan/cluster_spec.hpp"
#include "plan/layout_search.hpp"
#include "plan/pipeline_simulation.hpp"

namespace ptdp::test {

inline const toml::table& published_points() {
  static const toml::table points = toml::parse_file(std::string(PTDP_TEST_DATA_DIR) + "/published_points.toml");
  return points;
}

inline const ClusterSpec& shipped_cluster(const std::string& name) {
  static std::map<std::string, ClusterSpec> clusters;
  auto it = clusters.find(name);
  if (it == clusters.end())
    it = clusters.emplace(name, load_cluster(std::string(PTDP_SOURCE_DIR) + "/clusters/" + name + ".toml")).first;
  return it->second;
}

inline PipelineSimulation& simulation() {
  static PipelineSimulation shared({PTDP_TEST_PLUGIN_DIR});
  return shared;
}

// A GPT of the paper's family: s 2048, V 51200, ffn 4h, dropout 0.1 (its activations keep masks).
inline RunConfig::Model gpt(int layers, int hidden, int heads) {
  RunConfig::Model m;
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.seq_len = 2048, m.vocab = 51200;
  m.padded_vocab = 51200, m.ffn_hidden = 4 * hidden, m.dropout = 0.1f;
  return m;
}

inline int integer(const toml::table& t, const char* key) { return static_cast<int>(t[key].value<int64_t>().value()); }
inline double number(const toml::table& t, const char* key) { return t[key].value<double>().value(); }
inline std::vector<int> integers(const toml::table& t, const char* key) {
  std::vector<int> out;
  for (const auto& v : *t[key].as_array()) out.push_back(static_cast<int>(v.value<int64_t>().value()));
  return out;
}

// The fastest of `layouts` that fits, evaluated on `cluster`; none if none fits.
inline std::optional<PlanCandidate> fastest_fitting(const PlanRequest& request, const std::vector<PlanLayout>& layouts,
                                                    const ClusterSpec& cluster) {
  std::optional<PlanCandidate> best;
  for (const PlanLayout& layout : layouts) {
    if (layout_problem(request, layout)) continue;
    PlanCandidate c = evaluate_layout(request, layout, cluster, simulation());
    if (c.fits && (!best || c.time.total() < best->time.total())) best = c;
  }
  return best;
}

// The layouts with this (p, t, d) and recomputation that differ in b (up to 16) and v, with
// scatter/gather.
inline std::vector<PlanLayout> micro_batch_and_chunk_choices(const RunConfig::Model& model, int p, int t, int d,
                                                             bool recompute) {
  std::vector<PlanLayout> layouts;
  for (int b = 1; b <= 16; ++b)
    for (int v = 1; v <= model.layers / p; ++v) layouts.push_back({p, t, d, b, v, recompute, false, p > 1 && t > 1});
  return layouts;
}

}  // namespace ptdp::test
