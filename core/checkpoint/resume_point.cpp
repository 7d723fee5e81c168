#include "checkpoint/resume_point.hpp"

#include <fmt/format.h>

#include <ptdp/error.hpp>

namespace ptdp {

std::optional<int64_t> resume_point(const RunConfig& config, const std::vector<int64_t>& committed) {
  const std::string& dir = config.checkpoint.dir;
  if (committed.empty()) return std::nullopt;
  const std::string held = fmt::format("{} holds committed step{} {}", dir, committed.size() > 1 ? "s" : "",
                                       step_list(committed));
  if (!config.checkpoint.resume)
    throw Error(fmt::format(
        "checkpoint.dir {} of another run and checkpoint.resume = false: this run would overwrite some of "
        "them and a later resume would continue the other run; nothing was changed. Use another "
        "checkpoint.dir, move those steps away, or set checkpoint.resume = true",
        held));
  const int64_t latest = committed.back();
  if (latest > config.run.steps)
    throw Error(fmt::format("checkpoint.dir {}: step {} is beyond run.steps = {}; nothing was changed. "
                            "Raise run.steps or use another checkpoint.dir",
                            held, latest, config.run.steps));
  return latest;
}

}  // namespace ptdp
