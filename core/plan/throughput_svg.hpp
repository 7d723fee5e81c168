#pragma once
// Throughput against (p, t): a grid with one column per pipeline size and one row per
// tensor-parallel size, each cell the predicted step time of that (p, t)'s fastest fitting layout
// (over d, b, v, recomputation, ...), shaded by the best step time over its own (the measure the
// candidates are ranked by, so the darkest cell is the best); the best cell outlined.
#include <string>

#include "plan/layout_search.hpp"

namespace ptdp {

// One <rect class="cell"> per (p, t) the rules allow, its step time in data-step-s, with its
// layout, step time and TFLOP/s per GPU as a tooltip; "no fit" where none of its layouts fits; the best gets class="cell best".
std::string throughput_svg(const PlanResult& result, const std::string& title);

}  // namespace ptdp
