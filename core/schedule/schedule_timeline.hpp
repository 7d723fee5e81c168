#pragma once
// Pictures of a simulated schedule: an SVG drawn like the paper's Figure 4 (one row per stage,
// forwards and backwards in two colours, chunks in shades, the microbatch in each box, a time
// axis and a legend) and a Chrome trace of the same timeline.
#include <string>

#include "schedule/chrome_trace.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {

struct TimelineLabels {
  std::string scheduler;                  // shown in the title
  std::string time_unit = "ms";           // what one unit of simulated time is called
  double microseconds_per_unit = 1000.0;  // for the trace, which counts microseconds
};

std::string render_timeline_svg(const ScheduleShape& shape, const SimulationOptions& options,
                                const SimulationResult& result, const TimelineLabels& labels);

// The timeline as process `pid` of a trace: one thread per stage, one span per compute op.
void add_timeline_to_trace(ChromeTrace& trace, int pid, const ScheduleShape& shape, const SimulationResult& result,
                           const TimelineLabels& labels);

}  // namespace ptdp
