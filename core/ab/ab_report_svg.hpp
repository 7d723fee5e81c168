#pragma once
// report.svg of an A/B: above, each arm's step times (every sample a dot, the box from the first
// to the third quartile, the median a bar); below, the arms' loss curves overlaid (first round).
#include <string>

#include "ab/ab_analysis.hpp"

namespace ptdp {

std::string ab_report_svg(const AbAnalysis& analysis, int warmup);

}  // namespace ptdp
