#pragma once
// Where a run starts. A run never mixes with another run's committed steps: with
// checkpoint.resume = false a folder that already holds steps is refused, because saving into it
// would overwrite some of those steps and leave the later ones, and the next resume would
// silently continue the other run. A run may start from a chosen step of another run's folder
// (checkpoint.resume_from, checkpoint.resume_step); it then writes its own line of steps into a
// checkpoint.dir that holds none.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ptdp/checkpoint_store.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

struct ResumePoint {
  std::string dir;  // the folder to load from: checkpoint.dir or checkpoint.resume_from
  int64_t step = 0;
};

// Whether the run loads from a folder other than checkpoint.dir.
bool resumes_from_elsewhere(const RunConfig& config);

// Where the run starts (nullopt: from step 0), given the committed steps (ascending) the store
// lists in checkpoint.dir (`committed`) and, when resumes_from_elsewhere(), in
// checkpoint.resume_from (`source`). Throws ptdp::Error naming the folder and its steps when the
// run must not start there; nothing is changed on disk.
std::optional<ResumePoint> resume_point(const RunConfig& config, const std::vector<int64_t>& committed,
                                        const std::vector<int64_t>& source = {});

}  // namespace ptdp
