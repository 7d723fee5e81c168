#include "schedule/op_label.hpp"

namespace ptdp {

std::string op_label(const ComputeOp& op, int chunks) {
  std::string label(1, op.kind == OpKind::Forward ? 'F' : op.kind == OpKind::BackwardWeight ? 'W' : 'B');
  label += std::to_string(op.microbatch);
  if (chunks > 1) {
    label += '.';
    label += std::to_string(op.chunk);
  }
  return label;
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return "Forward";
    case OpKind::Backward: return "Backward";
    case OpKind::BackwardInput: return "BackwardInput";
    case OpKind::BackwardWeight: return "BackwardWeight";
  }
  return "unknown op";
}

const char* op_kind_category(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return "forward";
    case OpKind::Backward: return "backward";
    case OpKind::BackwardInput: return "backward (input)";
    case OpKind::BackwardWeight: return "backward (weight)";
  }
  return "unknown";
}

}  // namespace ptdp
