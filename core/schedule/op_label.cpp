#include "schedule/op_label.hpp"

namespace ptdp {

std::string op_label(const ComputeOp& op, int chunks) {
  std::string label(1, op.kind == OpKind::Forward ? 'F' : 'B');
  label += std::to_string(op.microbatch);
  if (chunks > 1) {
    label += '.';
    label += std::to_string(op.chunk);
  }
  return label;
}

}  // namespace ptdp
