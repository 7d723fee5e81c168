#pragma once
// A committed step opened for reading by the tools that use a trained model (eval, sample, export): the
// store, the step (the newest when none is asked for) and the metadata the trainer saved with
// it, including the resolved manifest ("config") that says what model it is.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"
#include "ptdp/checkpoint_store.hpp"

namespace ptdp::host {

struct StoredStep {
  std::shared_ptr<CheckpointStore> store;  // open_existing on the folder
  int64_t step = 0;
  nlohmann::json metadata;  // has "config"
};

// Throws ptdp::Error naming the folder: missing, no committed step, no such step (listing the
// ones there), or a step saved without its resolved manifest.
StoredStep open_stored_step(const std::string& folder, int64_t step, const std::string& store_plugin);

// The step's model rebuilt to run forward only in one CPU process (kernels-ref, fp32, resuming
// from `folder` at the step), whatever layout trained it: `overrides` (the caller's, then the
// user's --set) apply last. Throws ptdp::Error naming `what` when they ask for more than one process.
RunConfig one_process_config(const StoredStep& stored, const std::string& folder, const std::string& what,
                             const std::vector<std::string>& overrides);

}  // namespace ptdp::host
