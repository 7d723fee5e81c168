#pragma once
// Short names of compute ops as schedules are drawn (the paper's Figure 4 writes F1 F2 B1 ...):
// "F3" is the forward of microbatch 3, "B3.1" the backward of microbatch 3 through model chunk 1,
// "W3" its weight gradients when the backward is split (a split backward's input part is "B3", as
// in the zero-bubble paper's figures). Indices are the SDK's, from 0. The chunk suffix appears
// only when a stage has several chunks.
#include <string>

#include "ptdp/scheduler.hpp"

namespace ptdp {

std::string op_label(const ComputeOp& op, int chunks);

// "Forward", "Backward", "BackwardInput", "BackwardWeight": the SDK's names, for messages.
const char* op_kind_name(OpKind kind);
// "forward", "backward", "backward (input)", "backward (weight)": for pictures and traces.
const char* op_kind_category(OpKind kind);

}  // namespace ptdp
