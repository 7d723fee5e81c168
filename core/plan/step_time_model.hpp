#pragma once
// Predicted time of one training step for a layout, broken down the way the paper reasons about
// it (§3): the work of every microbatch, the tensor-parallel all-reduces inside it, the pipeline
// bubble and the inter-stage transfers (both from the schedule simulator, replaying the
// scheduler's real order), the data-parallel gradient reduction and the optimizer step.
//
// One microbatch through one layer, per GPU: the GEMMs (QKV, output projection, the two MLP
// GEMMs, the two batched attention GEMMs), each at the cluster's efficiency for its size, the
// backward twice the forward; the memory-bound kernels (LayerNorms, bias+GeLU, bias+dropout+add,
// and softmax+dropout over the attention scores where the kernels keep those in memory) at the
// cluster's HBM bandwidth; with recomputation one more forward before the backward. The last stage
// also runs the logits and the cross entropy, and every stage is given the last stage's time.
// Under a split backward (a zero-bubble schedule) the weight-gradient GEMMs are its W, and the
// bubble is the simulator's with transfers posted ahead.
// Nothing overlaps: the all-reduces, transfers and the gradient reduction are all on the
// critical path, as in Megatron-LM's implementation of the paper and in ptdp today.
#include "manifest/run_config.hpp"
#include "plan/cluster_spec.hpp"
#include "plan/pipeline_simulation.hpp"
#include "plan/plan_layout.hpp"

namespace ptdp {

struct StepTimeBreakdown {  // seconds
  double compute = 0;             // GEMMs and memory-bound kernels of all m microbatches
  double tensor_parallel = 0;     // the all-reduces inside them
  double bubble = 0;              // idle time of the simulated schedule
  double pipeline_transfers = 0;  // what the inter-stage transfers add to the simulated schedule
  double data_parallel = 0;       // gradient all-reduce (reduce-scatter + all-gather when sharded)
  double optimizer = 0;           // Adam and the gradient norm, memory bound
  double total() const {
    return compute + tensor_parallel + bubble + pipeline_transfers + data_parallel + optimizer;
  }
};

// One microbatch's forward and backward through one pipeline stage (the last, the busiest).
struct StageTimes {
  double forward_compute = 0, forward_tensor_parallel = 0;
  double backward_compute = 0, backward_tensor_parallel = 0;  // recomputation included
  // The part of the backward a split backward runs apart, in its W: the weight-gradient GEMMs,
  // as many FLOPs as the forward's GEMMs of the layers with weights (half of their backward's).
  double backward_weight = 0;
  double forward() const { return forward_compute + forward_tensor_parallel; }
  double backward() const { return backward_compute + backward_tensor_parallel; }
};

StageTimes stage_times(const RunConfig::Model& model, const PlanLayout& layout, const ClusterSpec& cluster);

// One inter-stage transfer of a microbatch's activation (or its gradient) between neighbours.
double pipeline_transfer_seconds(const RunConfig::Model& model, const PlanLayout& layout, const ClusterSpec& cluster);

StepTimeBreakdown step_time(const RunConfig::Model& model, int global_batch, const PlanLayout& layout,
                            const ClusterSpec& cluster, PipelineSimulation& simulation);

}  // namespace ptdp
