#pragma once
// The core's side of the FP8 recipe (sdk/include/ptdp/fp8.hpp) on one rank: the amax and scale
// tensors its FP8 blocks are bound to (one buffer each, in the kernels' memory), and under
// delayed scaling the amax history that the scales come from.
//
// Each step's amaxes are reduced (Max) over the tensor- and data-parallel groups before they enter
// the history, so every rank of a pipeline stage keeps the same history as one rank running the
// whole global batch would: the scales, and so the losses, are the same in every layout. The
// history is checkpointed; the scales are a function of it alone, so a resumed run continues as
// if it had not stopped.
#include <string>
#include <utility>
#include <vector>

#include <ptdp/fp8.hpp>
#include <ptdp/layer_kernels.hpp>

#include "checkpoint/host_state_tensor.hpp"
#include "runtime/topology.hpp"

namespace ptdp {

class Fp8ScalingState {
 public:
  // blocks: each of this rank's transformer blocks with its global layer index (of
  // model_layers). Binds those the recipe runs in FP8 (TransformerBlock::bind_fp8_scaling).
  Fp8ScalingState(LayerKernels& kernels, const Fp8Recipe& recipe, int model_layers,
                  const std::vector<std::pair<int, TransformerBlock*>>& blocks);

  // Before a step's first forward: the amaxes start from zero.
  void begin_step();
  // After the step's backward, before its optimizer step (collective over the tensor- and
  // data-parallel groups, under delayed scaling only): the step's amaxes are reduced, appended to
  // the history, and give the next step's scales. Returns the first amax that is not finite, as
  // "layers.3.mlp.fc1 output gradient", or "" (the history and scales are then left as they were).
  std::string finish_step(const ParallelGroups& groups);
  // The first amax this rank recorded in the step that is not finite, or "": what a non-finite
  // gradient norm names under tensorwise scaling, which keeps no history.
  std::string first_non_finite_amax();

  bool delayed() const { return recipe_.enabled && recipe_.scaling == Fp8Scaling::Delayed && !layers_.empty(); }
  // Each FP8 block's amax history as a checkpoint holds it: "layers.<i>.fp8_amax_history",
  // [amax_history, kFp8BlockLinears, kFp8Operands], the newest step first. Empty unless delayed().
  std::vector<HostStateTensor> history() const;
  // Takes histories saved by a run (history()); a saved history of another length gives its
  // newest rows. Refreshes the scales.
  void load_history(const std::vector<HostStateTensor>& saved);

 private:
  void write_scales();
  std::string entry_name(size_t entry) const;

  LayerKernels& kernels_;
  Fp8Recipe recipe_;
  std::vector<int> layers_;  // global index of each FP8 block, in the buffers' order
  OwnedTensor amax_, scale_;  // F32 [blocks, kFp8BlockLinears, kFp8Operands]
  // Under delayed scaling: [amax_history][entries], the newest step first.
  std::vector<float> history_;
};

}  // namespace ptdp
