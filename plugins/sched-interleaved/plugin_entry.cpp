// The plugin's entry: sched-interleaved, no configuration.
#include "interleaved_scheduler.hpp"

PTDP_PLUGIN_NO_CONFIG(ptdp::PluginKind::Scheduler, ptdp::Scheduler, ptdp::plugins::InterleavedScheduler,
                      "sched-interleaved", "1.0.0")
