// The plugin's entry: sched-1f1b, no configuration.
#include "one_f_one_b_scheduler.hpp"

PTDP_PLUGIN_NO_CONFIG(ptdp::PluginKind::Scheduler, ptdp::Scheduler, ptdp::plugins::OneFOneBScheduler,
                      "sched-1f1b", "1.0.0")
