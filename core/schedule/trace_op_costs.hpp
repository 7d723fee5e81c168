#pragma once
// The simulator's op costs as a run measured them: from the Chrome trace `ptdp-host run --trace`
// writes, where the executor records each compute op as a span of category "forward",
// "backward", "backward (input)" or "backward (weight)" (op_label.hpp), the median span of each
// kind over every rank. The median, because a trace's first step and a rank's stalls are outliers.
//
// The executor's spans are per chunk, so a chunk's median is multiplied by v for the whole
// stage's time the simulator takes. A split backward gives t_b = median B + median W and t_w =
// median W; a whole one t_b = median Backward (and t_w half of it, the simulator's default).
#include <string>

#include "schedule/schedule_simulator.hpp"

namespace ptdp {

// Times in ms (the trace counts microseconds); the transfer latency and model are `base`'s. Throws ptdp::Error naming the file when it cannot be read or parsed, or has
// no forward or no backward spans.
SimulationOptions op_costs_from_trace(const std::string& path, int chunks, SimulationOptions base);

}  // namespace ptdp
