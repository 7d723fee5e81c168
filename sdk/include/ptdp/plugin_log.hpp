#pragma once
// PluginLog: the host's log (PluginContext::log) for a plugin object and for everything it made.
// The host's log is valid only while the plugin object lives, but what the object made (a group
// split from a communicator, a layer that holds device memory) may be destroyed later and still
// have a teardown failure to tell. Copies share one sink, which the plugin object closes in its
// destructor; what is written after that, or to a log made without a context, goes to standard
// error. A context without a log callback stays silent, as PluginContext::write_log does.
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "ptdp/checked_call.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp {

class PluginLog {
 public:
  PluginLog() = default;
  explicit PluginLog(const PluginContext& context) {
    sink_->log = context.log;
    sink_->user = context.log_user;
    sink_->to_stderr = false;
  }

  void write(LogLevel level, const std::string& message) const {
    std::lock_guard lock(sink_->mutex);
    if (sink_->log) sink_->log(sink_->user, level, message.c_str());
    else if (sink_->to_stderr) std::fprintf(stderr, "%s\n", message.c_str());
  }

  // "<what>: <the first failure> (and N more failures)" as a warning, when anything failed.
  void write_failures(const std::string& what, const TeardownFailures& failures) const {
    if (!failures.empty()) write(LogLevel::Warn, what + ": " + failures.summary());
  }

  // From the plugin object's destructor: the host's log may be gone after it.
  void close() const {
    std::lock_guard lock(sink_->mutex);
    if (!sink_->log) return;
    sink_->log = nullptr;
    sink_->to_stderr = true;
  }

 private:
  struct Sink {
    std::mutex mutex;
    void (*log)(void*, LogLevel, const char*) = nullptr;
    void* user = nullptr;
    bool to_stderr = true;
  };
  std::shared_ptr<Sink> sink_ = std::make_shared<Sink>();
};

}  // namespace ptdp
