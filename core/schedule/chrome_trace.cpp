#include "schedule/chrome_trace.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "ptdp/error.hpp"

namespace ptdp {
namespace {

nlohmann::json args_json(const ChromeTrace::Args& args) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : args) std::visit([&](const auto& v) { object[key] = v; }, value);
  return object;
}

}  // namespace

void ChromeTrace::add_span(std::string name, std::string category, int pid, int tid, double start_us,
                           double duration_us, Args args) {
  std::lock_guard lock(mutex_);
  events_.push_back(Event{'X', std::move(name), std::move(category), pid, tid, start_us, duration_us, std::move(args)});
}

void ChromeTrace::add_instant(std::string name, std::string category, int pid, int tid, double time_us, Args args) {
  std::lock_guard lock(mutex_);
  events_.push_back(Event{'i', std::move(name), std::move(category), pid, tid, time_us, 0.0, std::move(args)});
}

void ChromeTrace::add_counter(std::string name, int pid, double time_us, Args values) {
  std::lock_guard lock(mutex_);
  events_.push_back(Event{'C', std::move(name), "", pid, 0, time_us, 0.0, std::move(values)});
}

void ChromeTrace::set_process_name(int pid, std::string name) {
  std::lock_guard lock(mutex_);
  events_.push_back(Event{'M', "process_name", "", pid, 0, 0.0, 0.0, {{"name", std::move(name)}}});
}

void ChromeTrace::set_thread_name(int pid, int tid, std::string name) {
  std::lock_guard lock(mutex_);
  events_.push_back(Event{'M', "thread_name", "", pid, tid, 0.0, 0.0, {{"name", std::move(name)}}});
  events_.push_back(Event{'M', "thread_sort_index", "", pid, tid, 0.0, 0.0, {{"sort_index", int64_t{tid}}}});
}

std::string ChromeTrace::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  {
    std::lock_guard lock(mutex_);
    for (const Event& e : events_) {
      nlohmann::json event{{"name", e.name}, {"ph", std::string(1, e.phase)}, {"pid", e.pid}, {"tid", e.tid}};
      if (e.phase != 'M') event["ts"] = e.time_us;
      if (e.phase == 'X') event["dur"] = e.duration_us;
      if (e.phase == 'i') event["s"] = "t";
      if (!e.category.empty()) event["cat"] = e.category;
      if (!e.args.empty()) event["args"] = args_json(e.args);
      events.push_back(std::move(event));
    }
  }
  return nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

void ChromeTrace::write(const std::string& path) const {
  const std::string json = to_json();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("trace " + path + ": cannot open for writing");
  out << json << '\n';
  out.close();
  if (!out) throw Error("trace " + path + ": write failed");
}

}  // namespace ptdp
