#include "plan/plan_layout.hpp"

#include <fmt/format.h>

namespace ptdp {

std::string recompute_name(const PlanLayout& l) {
  if (l.recompute) return "full";
  if (!l.selective()) return "none";
  std::string modules;
  for (const auto& m : kRecomputeModules)
    if (l.recompute_modules & module_bit(m.module)) modules += (modules.empty() ? "" : ",") + std::string(m.name);
  return "selective(" + modules + ")";
}

std::string layout_label(const PlanLayout& l) {
  return fmt::format("p {} t {} d {} b {} v {}{}{}{}{}{}", l.pipeline, l.tensor, l.data, l.micro_batch,
                     l.virtual_stages, l.recompute ? " recompute" : l.selective() ? " " + recompute_name(l) : "",
                     l.scatter_gather ? " sg" : "", l.sequence_parallel ? " sp" : "",
                     l.distributed_optimizer ? " dist-opt" : "", l.split_backward ? " zb" : "");
}

}  // namespace ptdp
