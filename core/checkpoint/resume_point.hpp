#pragma once
// Where a run starts in its checkpoint folder. A run never mixes with another run's committed
// steps: with checkpoint.resume = false a folder that already holds steps is refused, because
// saving into it would overwrite some of those steps and leave the later ones, and the next
// resume would silently continue the other run.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ptdp/checkpoint_store.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// The committed step to resume from (nullopt: start from step 0), given the steps `committed`
// (ascending) that the store lists in `config.checkpoint.dir`. Throws ptdp::Error naming the
// folder and its steps when the run must not start there; nothing is changed on disk.
std::optional<int64_t> resume_point(const RunConfig& config, const std::vector<int64_t>& committed);

}  // namespace ptdp
