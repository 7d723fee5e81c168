#pragma once
// CheckpointManager: saves and restores master weights and Adam moments through a
// CheckpointStore, by global tensor name and region, so a step saved under one (p, t, d) layout
// loads under any other. Each parameter "<name>" is stored as "<name>", "<name>.exp_avg" and
// "<name>.exp_avg_sq", all f32 with the parameter's global shape.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ptdp/checkpoint_store.hpp>
#include <ptdp/layer_kernels.hpp>

#include "checkpoint/checkpoint_role.hpp"
#include "checkpoint/host_state_tensor.hpp"

namespace ptdp {

class CheckpointManager {
 public:
  // `store` must already be open().
  CheckpointManager(std::shared_ptr<CheckpointStore> store, LayerKernels& kernels, CheckpointRole role);

  // Collective over the world: every rank calls it. Writes the parts of `params` this rank is
  // responsible for (see writes()), finishes the rank, waits in `barrier` for every rank, then
  // rank 0 commits the step with `metadata_json`. The step is visible once rank 0 returns.
  void save(int64_t step, const std::vector<ParamRef>& params, const std::string& metadata_json,
            const std::function<void()>& barrier);
  // save() in parts, for a caller that holds the moments of a few parameters at a time: write()
  // any number of times (each parameter once), then commit() collectively.
  void write(int64_t step, const std::vector<ParamRef>& params);
  void commit(int64_t step, const std::string& metadata_json, const std::function<void()>& barrier);

  // The newest committed step, if any.
  std::optional<int64_t> latest_step();
  // Every committed step, ascending.
  std::vector<int64_t> committed_steps() { return store_->list_steps(); }

  // Deletes all but the newest `keep` committed steps (checkpoint.keep; 0 keeps every step) and
  // returns the steps it deleted. Called by one rank, after a save.
  std::vector<int64_t> keep_newest(int keep);

  // Reads this rank's part of every parameter and its moments from `step`, whatever layout
  // saved it, then calls kernels.params_updated(). A tensor the step lacks, or holds with another
  // shape, fails with ptdp::Error naming the tensor and the step.
  void load(int64_t step, const std::vector<ParamRef>& params);
  // load() in parts: check() every parameter first, so that a step of another model is refused
  // before anything is overwritten, then read() them in any groups, then kernels.params_updated().
  void check(int64_t step, const std::vector<ParamRef>& params);
  void read(int64_t step, const std::vector<ParamRef>& params);

  std::string metadata(int64_t step);

  // Run state beside the parameters (the FP8 recipe's amax histories): whole f32 tensors in host
  // memory, the same on every rank of a tensor- and data-parallel group, so that the group's rank
  // of tp 0 and dp 0 writes them. Part of save() in parts: call before commit().
  void write_state(int64_t step, const std::vector<HostStateTensor>& tensors);
  // Those of `names` that `step` holds, whole (another run may have saved another length of the
  // first dimension); the ones it lacks are left out.
  std::vector<HostStateTensor> read_state(int64_t step, const std::vector<std::string>& names);

 private:
  std::shared_ptr<CheckpointStore> store_;
  LayerKernels& kernels_;
  CheckpointRole role_;
};

}  // namespace ptdp
