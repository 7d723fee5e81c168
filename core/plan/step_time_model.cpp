#include "plan/step_time_model.hpp"

#include <algorithm>

#include "plan/collective_time.hpp"
#include "plan/gemm_efficiency.hpp"
#include "plan/memory_model.hpp"

namespace ptdp {
namespace {

constexpr double kActivationBytes = 2;  // 16-bit activations and weights
constexpr double kGradientBytes = 4;    // fp32 gradients, reduced as they are kept

// Bytes the memory-bound kernels of one layer's forward move per token: two LayerNorms (read and
// write h each), two bias+dropout+add (read the output and the residual, write the sum, a 1-byte
// mask), bias+GeLU over the tensor rank's ffn/t columns. The backward moves twice as much.
double elementwise_forward_bytes_per_token(const RunConfig::Model& m, int tensor) {
  const double h = m.hidden, element = kActivationBytes;
  return 2 * (2 * element * h) + 2 * (3 * element + 1) * h + 2 * element * m.ffn_hidden / tensor;
}

// Softmax (read and write the scores) and dropout (read, write, a 1-byte mask) over the
// attention scores of one layer, b·(a/t)·s² elements, when the kernels keep them in memory.
double attention_score_forward_bytes(const RunConfig::Model& m, const PlanLayout& l) {
  const double scores = static_cast<double>(l.micro_batch) * m.heads / l.tensor * m.seq_len * m.seq_len;
  return scores * (4 * kActivationBytes + 1);
}

struct LayerForward {
  double compute = 0;          // GEMMs and memory-bound kernels
  double weight_gemms = 0;     // the GEMMs of the layers with weights (QKV, projection, FC1, FC2)
  double tensor_parallel = 0;  // the two all-reduces of the forward (under sequence parallelism a
                               // reduce-scatter and an all-gather each, the same volume)
  double selective = 0;        // what selective recomputation runs again before the backward
};

LayerForward layer_forward(const RunConfig::Model& m, const PlanLayout& l, const ClusterSpec& c) {
  const double tokens = static_cast<double>(l.micro_batch) * m.seq_len, h = m.hidden, t = l.tensor;
  LayerForward f;
  f.weight_gemms = gemm_seconds(c, 2 * tokens * h * 3 * h / t)               // QKV
                   + gemm_seconds(c, 2 * tokens * h * h / t)                 // output projection
                   + 2 * gemm_seconds(c, 2 * tokens * h * m.ffn_hidden / t);  // FC1, FC2
  f.compute = f.weight_gemms + 2 * gemm_seconds(c, 2 * tokens * m.seq_len * h / t);  // QK^T and scores·V, batched
  double bytes = tokens * elementwise_forward_bytes_per_token(m, l.tensor);
  if (c.attention_scores_in_memory) bytes += attention_score_forward_bytes(m, l);
  f.compute += bytes / c.hbm_bytes_per_s;
  f.tensor_parallel = 2 * all_reduce_seconds(tokens * h * kActivationBytes, l.tensor, group_link(c, l.tensor, 1));
  if (l.recomputes(RecomputeModule::CoreAttention)) {
    f.selective += 2 * gemm_seconds(c, 2 * tokens * m.seq_len * h / t);
    if (c.attention_scores_in_memory) f.selective += attention_score_forward_bytes(m, l) / c.hbm_bytes_per_s;
  }
  // A LayerNorm reads and writes h a token; bias+GeLU reads and writes ffn/t.
  if (l.recomputes(RecomputeModule::LayerNorm))
    f.selective += 2 * (2 * kActivationBytes * h) * tokens / (l.sequence_parallel ? t : 1) / c.hbm_bytes_per_s;
  if (l.recomputes(RecomputeModule::MlpActivation))
    f.selective += 2 * kActivationBytes * m.ffn_hidden / t * tokens / c.hbm_bytes_per_s;
  return f;
}

}  // namespace

StageTimes stage_times(const RunConfig::Model& m, const PlanLayout& l, const ClusterSpec& c) {
  const double layers = static_cast<double>(m.layers) / l.pipeline;
  const double tokens = static_cast<double>(l.micro_batch) * m.seq_len;
  const LayerForward layer = layer_forward(m, l, c);
  // The head on the last stage: the logits GEMM and the cross entropy over b·s·V/t fp32 logits
  // (written, read back for the loss and the gradient, written as the gradient).
  const double logits = static_cast<double>(m.vocab) / l.tensor * tokens;
  const double head_gemm = gemm_seconds(c, 2 * tokens * m.hidden * m.vocab / l.tensor);
  const double cross_entropy = logits * 4 * 4 / c.hbm_bytes_per_s;

  StageTimes s;
  s.forward_compute = layers * layer.compute + head_gemm + cross_entropy / 2;
  s.forward_tensor_parallel = layers * layer.tensor_parallel;
  s.backward_compute = 2 * layers * layer.compute + 2 * head_gemm + cross_entropy / 2;
  s.backward_tensor_parallel = 2 * layers * layer.tensor_parallel;
  if (l.recompute) {
    s.backward_compute += layers * layer.compute;
    s.backward_tensor_parallel += layers * layer.tensor_parallel;
  }
  s.backward_compute += layers * layer.selective;
  // The attention's batched GEMMs have no weights: their backward is all input gradient.
  s.backward_weight = layers * layer.weight_gemms + head_gemm;
  return s;
}

double pipeline_transfer_seconds(const RunConfig::Model& m, const PlanLayout& l, const ClusterSpec& c) {
  if (l.pipeline == 1) return 0;
  const double bytes = static_cast<double>(l.micro_batch) * m.seq_len * m.hidden * kActivationBytes;
  // Neighbouring stages are t·d ranks apart; the pipeline leaves a node somewhere as soon as it
  // spans more than one, and the slowest boundary sets the pace of all.
  const bool crosses_nodes = static_cast<long>(l.pipeline) * l.tensor * l.data > c.gpus_per_node;
  if (!crosses_nodes) return transfer_seconds(bytes, c.intra_node);
  if (!l.scatter_gather || l.tensor == 1) return transfer_seconds(bytes, c.inter_node);
  // Each tensor rank sends its 1/t over its own network port, the receivers all-gather on NVLink.
  return transfer_seconds(bytes / l.tensor, c.inter_node) + all_gather_seconds(bytes, l.tensor, c.intra_node);
}

StepTimeBreakdown step_time(const RunConfig::Model& m, int global_batch, const PlanLayout& l, const ClusterSpec& c,
                            PipelineSimulation& simulation) {
  const int microbatches = global_batch / (l.micro_batch * l.data);
  const StageTimes stage = stage_times(m, l, c);
  StepTimeBreakdown t;
  t.compute = microbatches * (stage.forward_compute + stage.backward_compute);
  t.tensor_parallel = microbatches * (stage.forward_tensor_parallel + stage.backward_tensor_parallel);
  if (l.pipeline > 1) {
    const ScheduleShape shape{l.pipeline, l.virtual_stages, microbatches};
    const double unit = stage.forward(), ratio = stage.backward() / stage.forward();
    const double weight = stage.backward_weight / unit;
    const double without_transfers = unit * simulation.makespan(shape, l.split_backward, ratio, weight, 0.0);
    const double latency = pipeline_transfer_seconds(m, l, c) / unit;
    t.bubble = without_transfers - microbatches * (stage.forward() + stage.backward());
    t.pipeline_transfers =
        unit * simulation.makespan(shape, l.split_backward, ratio, weight, latency) - without_transfers;
  }

  const double params = std::max(parameters_on_gpu(m, l, 0), parameters_on_gpu(m, l, l.pipeline - 1));
  const LinkSpec dp_link = group_link(c, l.data, l.tensor);
  t.data_parallel = l.distributed_optimizer
                        ? all_gather_seconds(params * kGradientBytes, l.data, dp_link) +
                              all_gather_seconds(params * kGradientBytes, l.data, dp_link)  // fp32 masters
                        : all_reduce_seconds(params * kGradientBytes, l.data, dp_link);
  // Adam reads master weights, gradient and both moments and writes three of them back plus the
  // bf16 working copy (30 bytes per parameter); the gradient norm reads the gradients (4).
  const double shard = l.distributed_optimizer ? params / l.data : params;
  t.optimizer = shard * 34 / c.hbm_bytes_per_s;
  return t;
}

}  // namespace ptdp
