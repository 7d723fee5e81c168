#pragma once
// Memory one GPU needs for a layout, on the busiest GPU (the first or the last pipeline stage):
// the model state at ptdp's precisions, the activations the schedule keeps in flight at its peak,
// and the cluster's fixed workspace.
//
// Model state, per parameter: bf16 working weights (2 bytes), fp32 gradients (4), fp32 master
// weights and Adam's two fp32 moments (12) — 18 bytes; ptdp's distributed optimizer divides the
// 12 by d, and kernels-fused then keeps fp32 copies of the embeddings for its lookups (4 bytes
// each of the first stage's embedding parameters). Activations of one layer and microbatch,
// 16-bit (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
// arXiv 2205.05198, §4): s·b·h·(10 + 24/t) bytes, plus 5·a·s²·b/t when the attention scores are
// kept in memory; s·b·h/t·(34 + 5·a·s/h) with sequence parallelism, and 34·s·b·h/t with it and
// selective recomputation of core_attention (layer_activation_bytes); with full recomputation
// only each layer's input, 2·s·b·h bytes (/t with sequence parallelism), plus one layer's full
// set while it is recomputed. The last stage also holds the fp32 logits of one microbatch, b·s·V/t·4 bytes.
#include <vector>

#include "manifest/run_config.hpp"
#include "plan/cluster_spec.hpp"
#include "plan/plan_layout.hpp"

namespace ptdp {

struct MemoryBreakdown {  // bytes
  double weights = 0, gradients = 0, optimizer_state = 0, activations = 0, workspace = 0;
  int stage = 0;  // which pipeline stage it is
  double total() const { return weights + gradients + optimizer_state + activations + workspace; }
};

// Parameters held by one GPU of `stage` (tensor-parallel slices; the position embedding and
// LayerNorms replicated).
double parameters_on_gpu(const RunConfig::Model& model, const PlanLayout& layout, int stage);

// `peak_activations`: per stage, the microbatch-chunks alive at once (the schedule verifier's);
// empty for the model state and workspace alone.
MemoryBreakdown memory_per_gpu(const RunConfig::Model& model, const PlanLayout& layout, const ClusterSpec& cluster,
                               const std::vector<int>& peak_activations);

// Bytes of one layer's saved activations for one microbatch, without full recomputation (the
// paper's §4, docs/memory.md): s·b·h·(10/t' + 24/t) with t' = t under sequence parallelism (else
// 1), less what selective recomputation recomputes (the LayerNorm outputs, 4·s·b·h/t'; the GeLU
// output, 8·s·b·h/t), plus 5·a·s²·b/t where the attention scores are kept in memory and
// core_attention is not recomputed. Without dropout (model.dropout = 0) there are no masks:
// s·b·h·(8/t' + 24/t), and 2·a·s²·b/t of scores.
double layer_activation_bytes(const RunConfig::Model& model, const PlanLayout& layout, bool scores_in_memory);
double layer_activation_bytes(const RunConfig::Model& model, const PlanLayout& layout, const ClusterSpec& cluster);
// What a layer keeps under full recomputation: its input, 2·s·b·h/t' bytes.
double layer_input_bytes(const RunConfig::Model& model, const PlanLayout& layout);
// Activation bytes of the busiest end stage: `peak` microbatch-chunks of `layers_per_chunk`
// layers each, the layer being recomputed under full recomputation, and on the last stage one
// microbatch's fp32 logits.
double stage_activation_bytes(const RunConfig::Model& model, const PlanLayout& layout, bool scores_in_memory,
                              int peak, bool last_stage);

}  // namespace ptdp
