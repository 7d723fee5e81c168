#include "plan/plan_layout.hpp"

#include <fmt/format.h>

namespace ptdp {

std::string layout_label(const PlanLayout& l) {
  return fmt::format("p {} t {} d {} b {} v {}{}{}{}", l.pipeline, l.tensor, l.data, l.micro_batch, l.virtual_stages,
                     l.recompute ? " recompute" : "", l.scatter_gather ? " sg" : "",
                     l.distributed_optimizer ? " dist-opt" : "");
}

}  // namespace ptdp
