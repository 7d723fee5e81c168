#pragma once
// What each kind of compute op computes of a microbatch's pass through a chunk. A whole Backward
// computes both gradients; a split backward computes the input gradient (which the previous
// virtual stage waits for) in its BackwardInput and the weight gradients (which nobody waits
// for) in its BackwardWeight.
#include "ptdp/scheduler.hpp"

namespace ptdp {

inline bool computes_input_gradient(OpKind kind) { return kind == OpKind::Backward || kind == OpKind::BackwardInput; }
inline bool computes_weight_gradient(OpKind kind) { return kind == OpKind::Backward || kind == OpKind::BackwardWeight; }
inline bool is_known_op_kind(OpKind kind) {
  return kind == OpKind::Forward || kind == OpKind::Backward || kind == OpKind::BackwardInput ||
         kind == OpKind::BackwardWeight;
}

}  // namespace ptdp
