#pragma once
// The world a job runs in, and parallel.data, which a manifest may leave to it: d = world /
// (pipeline · tensor). The world is the size an external launcher (mpirun, srun, torchrun)
// reports when one started the job, else launch.nproc_per_node · nnodes (ptdp-host's own
// launcher, and every command that checks or plans a job).
#include <optional>
#include <string>

#include "manifest/manifest_locator.hpp"
#include "manifest/run_config.hpp"

namespace ptdp {

struct LaunchedWorld {
  std::string launcher;  // as RankEnvironment names it: "torchrun", "mpirun", "srun"
  int size = 0;
};

// Before the rules that use d. Left out (`data_given` false): sets parallel.data from the world
// and notes where it came from, or throws ManifestError when pipeline · tensor does not divide
// the world. Given: checks pipeline · tensor · data against the launcher's world when one
// started the job (noting a launch table that disagrees, which is then ignored), else against
// launch.nproc_per_node · nnodes.
void settle_data_parallel(RunConfig& config, const ManifestLocator& locator, bool data_given,
                          const std::optional<LaunchedWorld>& launched);

// Checks that the layout fits the world the process actually runs in (e.g. the size an external
// launcher such as mpirun or srun reports), which can differ from the manifest's launch table.
void check_world_size(const RunConfig& config, int world_size);

}  // namespace ptdp
