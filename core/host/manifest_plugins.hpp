#pragma once
// What `validate` and `run` check of a manifest beyond its keys, in one process before any rank
// starts: that each plugin it names loads and is of its slot's kind, that each plugin's options
// pass the schema the plugin declares, that the communicator moves the kernels' memory and can
// share a GPU when launch.ranks_per_gpu asks it to, and that the scheduler serves the manifest's
// shape (its schedule lowered and verified). So a manifest that `validate` accepts is not refused by
// every rank of `run`, and a bad one is reported once.
#include <string>
#include <vector>

#include <ptdp/tensor.hpp>

#include "manifest/run_config.hpp"

namespace ptdp::host {

// Lines for `validate` to print ("loaded       comm-ucx 1.0.0, ...", "schedule     ... verified").
// Throws ManifestError "<manifest>: plugins.<slot>: <reason>" on the first problem.
std::vector<std::string> check_manifest_plugins(const RunConfig& config);

// What the manifest's kernels plugin computes in (its device kind), from a short-lived instance
// that touches no device.
MemoryKind kernels_memory(const RunConfig& config);

// Exit status for a manifest that `validate` refuses; `run` exits with it too.
inline constexpr int kExitInvalidManifest = 2;

}  // namespace ptdp::host
