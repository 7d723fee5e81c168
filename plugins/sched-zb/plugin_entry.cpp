// The plugin's entry: sched-zb, with the zero-bubble schedule to serve as its one option.
#include "zero_bubble_scheduler.hpp"

namespace {

const ptdp::ConfigKeySpec kSchema[] = {
    {"schedule", ptdp::ConfigType::String, "\"zb-h1\"", 0, 0, "zb-h1|zb-h2",
     "zb-h1 keeps 1F1B's peak activations (p microbatches); zb-h2 keeps up to 2p - 1 for a bubble near zero"},
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::Scheduler, ptdp::Scheduler, ptdp::plugins::ZeroBubbleScheduler, "sched-zb", "1.1.0",
            kSchema)
