#include "checkpoint/resume_point.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <ptdp/error.hpp>

namespace ptdp {
namespace {

std::string holds(const std::string& dir, const std::vector<int64_t>& steps) {
  return fmt::format("{} holds committed step{} {}", dir, steps.size() > 1 ? "s" : "", step_list(steps));
}

void check_within_run(const RunConfig& config, const std::string& dir, const std::vector<int64_t>& steps,
                      int64_t step) {
  if (step > config.run.steps)
    throw Error(fmt::format("checkpoint.dir {}: step {} is beyond run.steps = {}; nothing was changed. "
                            "Raise run.steps or use another checkpoint.dir",
                            holds(dir, steps), step, config.run.steps));
}

}  // namespace

bool resumes_from_elsewhere(const RunConfig& config) {
  return !config.checkpoint.resume_from.empty() && config.checkpoint.resume_from != config.checkpoint.dir;
}

std::optional<ResumePoint> resume_point(const RunConfig& config, const std::vector<int64_t>& committed,
                                        const std::vector<int64_t>& source) {
  const std::string& dir = config.checkpoint.dir;
  const int64_t chosen = config.checkpoint.resume_step;
  if (resumes_from_elsewhere(config)) {
    const std::string& from = config.checkpoint.resume_from;
    if (!committed.empty())
      throw Error(fmt::format("checkpoint.dir {} of another run, and checkpoint.resume_from starts a new line of "
                              "steps from {}; nothing was changed. Use an empty checkpoint.dir",
                              holds(dir, committed), from));
    if (source.empty()) throw Error(fmt::format("checkpoint.resume_from {} holds no committed step", from));
    if (chosen > 0 && !std::binary_search(source.begin(), source.end(), chosen))
      throw Error(fmt::format("checkpoint.resume_step = {}: {}, not that one", chosen, holds(from, source)));
    const int64_t step = chosen > 0 ? chosen : source.back();
    check_within_run(config, from, source, step);
    return ResumePoint{from, step};
  }
  if (committed.empty()) return std::nullopt;
  if (!config.checkpoint.resume)
    throw Error(fmt::format(
        "checkpoint.dir {} of another run and checkpoint.resume = false: this run would overwrite some of "
        "them and a later resume would continue the other run; nothing was changed. Use another "
        "checkpoint.dir, move those steps away, or set checkpoint.resume = true",
        holds(dir, committed)));
  if (chosen > 0 && !std::binary_search(committed.begin(), committed.end(), chosen))
    throw Error(fmt::format("checkpoint.resume_step = {}: {}, not that one", chosen, holds(dir, committed)));
  if (chosen > 0 && chosen != committed.back())
    throw Error(fmt::format("checkpoint.resume_step = {}: {}, and resuming from an earlier one in the same folder "
                            "would mix the two lines of steps; nothing was changed. Set checkpoint.dir to an "
                            "empty folder to start a new line from step {}",
                            chosen, holds(dir, committed), chosen));
  check_within_run(config, dir, committed, committed.back());
  return ResumePoint{dir, committed.back()};
}

}  // namespace ptdp
