#include "plan/memory_model.hpp"

#include <algorithm>

namespace ptdp {
namespace {

constexpr double kWeightBytes = 2, kGradientBytes = 4;  // per parameter
constexpr double kMasterBytes = 4, kMomentBytes = 8;    // the optimizer state
constexpr double kActivationBytes = 2;                                        // 16-bit activations
constexpr double kLogitBytes = 4;                                             // fp32 logits

double padded_vocab(const RunConfig::Model& m, int tensor) {
  return static_cast<double>((m.vocab + tensor - 1) / tensor * tensor);
}

}  // namespace

double parameters_on_gpu(const RunConfig::Model& m, const PlanLayout& layout, int stage) {
  const double h = m.hidden, t = layout.tensor;
  const double layers = static_cast<double>(m.layers) / layout.pipeline;
  // Q, K, V, output projection and the two MLP matrices, their biases (5h + ffn), two LayerNorms
  // (4h): 12h² + 13h for ffn = 4h, the paper's count.
  const double per_layer = 4 * h * h + 2 * h * m.ffn_hidden + 9 * h + m.ffn_hidden;
  double params = layers * per_layer / t;
  const double embedding = padded_vocab(m, layout.tensor) * h / t;
  if (stage == 0) params += embedding + static_cast<double>(m.seq_len) * h;
  if (stage == layout.pipeline - 1) params += 2 * h + (layout.pipeline > 1 ? embedding : 0);  // tied copy
  return params;
}

double layer_activation_bytes(const RunConfig::Model& m, const PlanLayout& layout, bool scores_in_memory) {
  const double sbh = static_cast<double>(m.seq_len) * layout.micro_batch * m.hidden, t = layout.tensor;
  const double replicated_over = layout.sequence_parallel ? t : 1;
  // The 10: the two LayerNorms' inputs (4) and outputs (4, the QKV and FC1 inputs), the two
  // dropout masks (2). The 24/t: Q and K (4), V (2), the projection's input (2), FC1's output (8)
  // and the GeLU's (8, FC2's input). A model without dropout keeps no masks: the 10 is 8, and of
  // the scores' 5 (softmax output 2, dropout mask 1, dropout output 2) only the softmax's 2 remain,
  // the dropout's output being the softmax's.
  const bool dropout = m.dropout > 0;
  double replicated = dropout ? 10 : 8, split = 24;
  if (layout.recomputes(RecomputeModule::LayerNorm)) replicated -= 4;
  if (layout.recomputes(RecomputeModule::MlpActivation)) split -= 8;
  double bytes = sbh * (replicated / replicated_over + split / t);
  if (scores_in_memory && !layout.recomputes(RecomputeModule::CoreAttention))
    bytes += (dropout ? 5.0 : 2.0) * m.heads * m.seq_len * static_cast<double>(m.seq_len) * layout.micro_batch / t;
  return bytes;
}

double layer_activation_bytes(const RunConfig::Model& m, const PlanLayout& layout, const ClusterSpec& cluster) {
  return layer_activation_bytes(m, layout, cluster.attention_scores_in_memory);
}

double layer_input_bytes(const RunConfig::Model& m, const PlanLayout& layout) {
  const double sbh = static_cast<double>(m.seq_len) * layout.micro_batch * m.hidden;
  return kActivationBytes * sbh / (layout.sequence_parallel ? layout.tensor : 1);
}

double stage_activation_bytes(const RunConfig::Model& m, const PlanLayout& layout, bool scores_in_memory, int peak,
                              bool last_stage) {
  const double layers_per_chunk = static_cast<double>(m.layers) / (layout.pipeline * layout.virtual_stages);
  PlanLayout kept_whole = layout;
  kept_whole.recompute = false;
  kept_whole.recompute_modules = 0;
  const double full_layer = layer_activation_bytes(m, kept_whole, scores_in_memory);
  double bytes = peak * layers_per_chunk *
                 (layout.recompute ? layer_input_bytes(m, layout) : layer_activation_bytes(m, layout, scores_in_memory));
  if (layout.recompute) bytes += full_layer;  // the layer being recomputed
  if (last_stage)
    bytes += static_cast<double>(layout.micro_batch) * m.seq_len * padded_vocab(m, layout.tensor) / layout.tensor *
             kLogitBytes;
  return bytes;
}

MemoryBreakdown memory_per_gpu(const RunConfig::Model& m, const PlanLayout& layout, const ClusterSpec& cluster,
                               const std::vector<int>& peak_activations) {
  MemoryBreakdown busiest;
  for (int stage : {0, layout.pipeline - 1}) {
    MemoryBreakdown b;
    b.stage = stage;
    const double params = parameters_on_gpu(m, layout, stage);
    b.weights = params * kWeightBytes;
    b.gradients = params * kGradientBytes;
    const double shards = layout.distributed_optimizer ? layout.data : 1;
    b.optimizer_state = params * (kMasterBytes + kMomentBytes) / shards;
    // Without a whole master, the kernels keep the fp32 values of what they read in fp32: the
    // embeddings' lookups (the LayerNorms and biases are too small to count).
    if (layout.distributed_optimizer && stage == 0)
      b.weights += (padded_vocab(m, layout.tensor) * m.hidden / layout.tensor + double(m.seq_len) * m.hidden) * kMasterBytes;
    b.workspace = cluster.workspace_bytes;
    if (peak_activations.empty()) {  // the model state alone
      if (b.total() > busiest.total()) busiest = b;
      continue;
    }
    b.activations = stage_activation_bytes(m, layout, cluster.attention_scores_in_memory, peak_activations.at(stage),
                                           stage == layout.pipeline - 1);
    if (b.total() > busiest.total()) busiest = b;
  }
  return busiest;
}

}  // namespace ptdp
