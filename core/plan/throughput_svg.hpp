#pragma once
// Throughput against (p, t): for each pipeline × tensor split of the GPUs, the TFLOP/s per GPU of
// its fastest fitting layout (over d, b, v, recomputation, ...), as a bar chart in p order.
#include <string>

#include "plan/layout_search.hpp"

namespace ptdp {

// One <rect class="bar"> per (p, t) with a fitting layout, labelled with its TFLOP/s; (p, t) with
// none get a "does not fit" label; the best is drawn in its own colour.
std::string throughput_svg(const PlanResult& result, const std::string& title);

}  // namespace ptdp
