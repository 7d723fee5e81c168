#pragma once
// A Chrome trace-event file (the JSON object format that chrome://tracing and ui.perfetto.dev
// open): spans, instants and counters on named processes and threads, in microseconds. Events
// are kept in memory and written at once; the add_* and set_* calls may come from several
// threads.
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ptdp {

class ChromeTrace {
 public:
  using ArgValue = std::variant<int64_t, double, std::string>;
  using Args = std::vector<std::pair<std::string, ArgValue>>;

  // Something that took [start_us, start_us + duration_us) on thread `tid` of process `pid`.
  void add_span(std::string name, std::string category, int pid, int tid, double start_us, double duration_us,
                Args args = {});
  // A moment on one thread.
  void add_instant(std::string name, std::string category, int pid, int tid, double time_us, Args args = {});
  // Values of a named counter track of process `pid` from time_us on (each arg is one series).
  void add_counter(std::string name, int pid, double time_us, Args values);
  // Names shown for a process and a thread; threads are listed in the order of `tid`.
  void set_process_name(int pid, std::string name);
  void set_thread_name(int pid, int tid, std::string name);

  std::string to_json() const;
  // Throws ptdp::Error naming the file when it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Event {
    char phase;  // 'X' span, 'i' instant, 'C' counter, 'M' metadata
    std::string name, category;
    int pid, tid;
    double time_us, duration_us;
    Args args;
  };
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace ptdp
