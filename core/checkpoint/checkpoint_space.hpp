#pragma once
// How much disk a checkpoint step takes, and how much free space a save needs while it is
// written: every rank first spools its shards, then writes its rank file from the spool, so for
// a moment each rank's data is on disk twice.
#include <cstdint>
#include <string>

#include "manifest/run_config.hpp"

namespace ptdp {

// Bytes of tensor data in one committed step of this model: the fp32 master weights and both
// Adam moments of every parameter, each element once (the padded vocabulary included).
uint64_t checkpoint_step_bytes(const RunConfig::Model& model);

// Free space a save needs while it is written: twice the step.
inline uint64_t checkpoint_save_bytes(const RunConfig::Model& model) { return 2 * checkpoint_step_bytes(model); }

// "512 B", "3.2 MB", "1.2 GB" (powers of 1000, as df -H prints them).
std::string byte_size(uint64_t bytes);

}  // namespace ptdp
