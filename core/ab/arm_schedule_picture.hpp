#pragma once
// schedule-<arm>.svg of an A/B: the arm's pipeline schedule as its scheduler makes it for the
// arm's layout, simulated and drawn as `ptdp-host schedule --svg` draws it. It shows which ops fill
// which idle time (a split backward's W's orange); the arms' measured step times are the report's.
#include <string>

#include "manifest/run_config.hpp"

namespace ptdp {

// Uniform op times, T_F = 1, a whole backward 2 (of it T_W = 1 when the schedule splits it), and
// transfers posted ahead: the model the schedulers' bubble formulas assume, said in the picture.
std::string arm_schedule_svg(const RunConfig& config);

}  // namespace ptdp
