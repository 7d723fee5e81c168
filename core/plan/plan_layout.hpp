#pragma once
// One way to run a model's step on n GPUs: the dimensions the planner chooses between.
#include <cstdint>
#include <string>

#include <ptdp/activation_recompute.hpp>

namespace ptdp {

struct PlanLayout {
  int pipeline = 1;        // p
  int tensor = 1;          // t
  int data = 1;            // d
  int micro_batch = 1;     // b
  int virtual_stages = 1;  // v
  bool recompute = false;  // full activation recomputation
  bool distributed_optimizer = false;  // fp32 master weights and Adam moments sharded over d (ZeRO-1), gradients reduce-scattered
  bool scatter_gather = false;         // inter-stage transfers as 1/t per tensor rank, then all-gather
  bool sequence_parallel = false;      // LayerNorm, dropout and residual activations split over t
  // Selective recomputation (unless `recompute`): bits of RecomputeModule (ptdp/activation_recompute.hpp)
  uint32_t recompute_modules = 0;
  // The backward split into input and weight gradients, the weight gradients filling the bubble
  // (a zero-bubble schedule: the stock scheduler that serves the shape that way, sched-zb's ZB-H1).
  bool split_backward = false;

  bool selective() const { return !recompute && recompute_modules != 0; }
  bool recomputes(RecomputeModule m) const { return selective() && (recompute_modules & module_bit(m)) != 0; }

  int gpus() const { return pipeline * tensor * data; }
  bool operator==(const PlanLayout&) const = default;
};

// "p 8 t 8 d 1 b 2 v 1 recompute sg sp zb", the way the planner's tables name a layout.
std::string layout_label(const PlanLayout& layout);
// "none", "full" or "selective(core_attention,...)".
std::string recompute_name(const PlanLayout& layout);

}  // namespace ptdp
