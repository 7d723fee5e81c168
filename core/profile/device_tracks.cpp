#include "profile/device_tracks.hpp"

#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profile/kernel_class.hpp"

namespace ptdp {

std::string device_activities_to_json(const std::vector<DeviceActivity>& activities) {
  nlohmann::json out = nlohmann::json::array();
  for (const DeviceActivity& a : activities)
    out.push_back({{"kind", static_cast<int>(a.kind)}, {"name", a.name}, {"stream", a.stream},
                   {"ts", a.start_us}, {"dur", a.duration_us}, {"bytes", a.bytes}});
  return out.dump();
}

std::vector<DeviceActivity> device_activities_from_json(const std::string& text) {
  std::vector<DeviceActivity> out;
  for (const auto& j : nlohmann::json::parse(text)) {
    DeviceActivity a;
    a.kind = static_cast<DeviceActivity::Kind>(j.at("kind").get<int>());
    a.name = j.at("name").get<std::string>();
    a.stream = j.at("stream").get<uint32_t>();
    a.start_us = j.at("ts").get<double>();
    a.duration_us = j.at("dur").get<double>();
    a.bytes = j.at("bytes").get<uint64_t>();
    out.push_back(std::move(a));
  }
  return out;
}

void add_device_tracks(ChromeTrace& trace, int pid, const std::vector<DeviceActivity>& activities, double origin_us,
                       int first_tid) {
  std::map<uint32_t, int> track;  // stream id -> trace thread
  for (const DeviceActivity& a : activities) track.emplace(a.stream, 0);
  int next = first_tid;
  for (auto& [stream, tid] : track) {
    tid = next++;
    trace.set_thread_name(pid, tid, fmt::format("GPU stream {}", stream));
  }
  for (const DeviceActivity& a : activities) {
    const bool kernel = a.kind == DeviceActivity::Kind::Kernel;
    ChromeTrace::Args args;
    if (kernel) args.emplace_back("kernel", a.name);
    else args.emplace_back("bytes", static_cast<int64_t>(a.bytes));
    trace.add_span(kernel ? kernel_function_name(a.name) : a.name, kernel_class_name(classify(a)), pid,
                   track.at(a.stream), a.start_us - origin_us, a.duration_us, std::move(args));
  }
}

}  // namespace ptdp
