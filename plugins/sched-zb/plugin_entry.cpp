// The plugin's entry: sched-zb, no configuration.
#include "zero_bubble_scheduler.hpp"

PTDP_PLUGIN_NO_CONFIG(ptdp::PluginKind::Scheduler, ptdp::Scheduler, ptdp::plugins::ZeroBubbleScheduler, "sched-zb",
                      "1.0.0")
