#pragma once
// The learning-rate schedule a run follows, saved with every checkpoint so that a resume
// continues it instead of silently starting another one. Resuming with a larger run.steps and
// decay_steps = 0 would otherwise stretch the decay and make the rate jump back up. On resume
// the saved decay length is kept when the manifest leaves it implicit (decay_steps = 0); any
// key the manifest sets to another value wins. Either way the log says what changed and what
// it does to the rate of the next step.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// The schedule keys of `config` with decay_steps made explicit (run.steps when it is 0).
RunConfig::Optimizer schedule_of(const RunConfig& config);

// {"lr", "min_lr", "warmup_steps", "decay_steps", "decay"}: what a checkpoint stores.
nlohmann::json schedule_record(const RunConfig::Optimizer& schedule);

struct ResumedSchedule {
  RunConfig::Optimizer schedule;     // what the run continues with, decay_steps explicit
  std::vector<std::string> changes;  // one line per difference from the saved schedule
};

// The schedule for a run of `config` resumed at the end of `step`, from the record saved with
// that step (null when the checkpoint predates schedule records).
ResumedSchedule resume_schedule(const RunConfig& config, const nlohmann::json& saved, int64_t step);

}  // namespace ptdp
