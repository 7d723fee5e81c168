#include "metrics/schedule_state.hpp"

#include <fmt/format.h>
#include <ptdp/message_text.hpp>

#include "metrics/learning_rate.hpp"

namespace ptdp {

RunConfig::Optimizer schedule_of(const RunConfig& config) {
  RunConfig::Optimizer schedule = config.optimizer;
  if (schedule.decay_steps == 0) schedule.decay_steps = config.run.steps;
  return schedule;
}

nlohmann::json schedule_record(const RunConfig::Optimizer& s) {
  return {{"lr", s.lr}, {"min_lr", s.min_lr}, {"warmup_steps", s.warmup_steps}, {"decay_steps", s.decay_steps},
          {"decay", s.decay}};
}

ResumedSchedule resume_schedule(const RunConfig& config, const nlohmann::json& saved, int64_t step) {
  ResumedSchedule out{schedule_of(config), {}};
  if (!saved.is_object()) {
    out.changes.push_back(fmt::format("the checkpoint of step {} holds no learning-rate schedule (saved by an "
                                      "older ptdp): continuing with the manifest's",
                                      step));
    return out;
  }
  RunConfig::Optimizer before = out.schedule;
  try {
    before.lr = saved.at("lr").get<double>();
    before.min_lr = saved.at("min_lr").get<double>();
    before.warmup_steps = saved.at("warmup_steps").get<int64_t>();
    before.decay_steps = saved.at("decay_steps").get<int64_t>();
    before.decay = saved.at("decay").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    out.changes.push_back(fmt::format("the checkpoint of step {} has an unreadable learning-rate schedule ({}): "
                                      "continuing with the manifest's",
                                      step, json_reason(e.what())));
    return out;
  }
  // The length the decay had when the manifest leaves it to run.steps.
  if (config.optimizer.decay_steps == 0 && before.decay_steps != config.run.steps) {
    out.schedule.decay_steps = before.decay_steps;
    out.changes.push_back(fmt::format(
        "run.steps is {} and optimizer.decay_steps is 0: the decay keeps the {} steps it was saved with, so the "
        "rate goes on from {:.3g}; set optimizer.decay_steps = {} to stretch it (the rate would jump to {:.3g})",
        config.run.steps, before.decay_steps, learning_rate(before, step, before.decay_steps), config.run.steps,
        learning_rate(schedule_of(config), step, config.run.steps)));
  }
  const RunConfig::Optimizer& now = out.schedule;
  std::vector<std::string> keys;
  if (now.lr != before.lr) keys.push_back(fmt::format("optimizer.lr {:g} -> {:g}", before.lr, now.lr));
  if (now.min_lr != before.min_lr) keys.push_back(fmt::format("optimizer.min_lr {:g} -> {:g}", before.min_lr, now.min_lr));
  if (now.warmup_steps != before.warmup_steps)
    keys.push_back(fmt::format("optimizer.warmup_steps {} -> {}", before.warmup_steps, now.warmup_steps));
  if (now.decay_steps != before.decay_steps)
    keys.push_back(fmt::format("decay length {} -> {} steps", before.decay_steps, now.decay_steps));
  if (now.decay != before.decay) keys.push_back(fmt::format("optimizer.decay {} -> {}", before.decay, now.decay));
  if (!keys.empty()) {
    std::string list;
    for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + k;
    out.changes.push_back(fmt::format("the schedule changed since step {} was saved ({}): the rate of step {} is "
                                      "{:.3g} instead of {:.3g}",
                                      step, list, step + 1, learning_rate(now, step, now.decay_steps),
                                      learning_rate(before, step, before.decay_steps)));
  }
  return out;
}

}  // namespace ptdp
