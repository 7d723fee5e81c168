#pragma once
// A rank's device work in the `--trace` timeline: one track (trace thread) per device stream,
// beside the track of the rank's own ops (thread 0), each kernel named by its function and
// filed under its class. The records travel to rank 0 as JSON through the rendezvous store.
#include <string>
#include <vector>

#include <ptdp/device_profiler.hpp>

#include "schedule/chrome_trace.hpp"

namespace ptdp {

std::string device_activities_to_json(const std::vector<DeviceActivity>& activities);
std::vector<DeviceActivity> device_activities_from_json(const std::string& text);

// Adds the activities to process `pid` of the trace, times shifted by -origin_us (the origin of
// the rank's own spans): stream tracks are threads first_tid, first_tid + 1, ... in the order of
// the stream ids, named "GPU stream <id>".
void add_device_tracks(ChromeTrace& trace, int pid, const std::vector<DeviceActivity>& activities, double origin_us,
                       int first_tid);

}  // namespace ptdp
