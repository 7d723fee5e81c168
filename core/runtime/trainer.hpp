#pragma once
// One rank's training run: loads the plugins a manifest names, joins the job through the
// rendezvous, builds this rank's model chunks, verifies the schedule, and trains.
#include <functional>
#include <string>

#include <ptdp/layer_kernels.hpp>

#include "launch/rank_environment.hpp"
#include "manifest/run_config.hpp"

namespace ptdp {

class ModelChunk;

struct TrainOptions {
  std::string metrics_path;  // --metrics FILE.jsonl (rank 0 writes it)
  std::string trace_path;    // --trace FILE.json (every rank's real timeline, merged by rank 0)
  int trace_steps = 2;       // steps recorded after the first (warm-up) step
  bool profile = false;      // --profile: the device's kernels and copies over the traced steps
  int eval_batches = 0;      // > 0: train nothing; log the mean loss of this many global batches of data.path
  // Set: train nothing; once the model is built and the checkpoint loaded, hand them to this (one
  // rank, p = v = 1: the whole model in one chunk) and return. `ptdp-host sample` uses it.
  std::function<void(LayerKernels&, ModelChunk&, const ModelSpec&)> use_loaded_model;
};

enum class TrainOutcome {
  Finished,         // every step of run.steps
  StoppedBySignal,  // a stop signal (runtime/stop_signal.hpp): the step finished, a checkpoint saved
};

// The caller has run check_manifest_plugins (core/host/manifest_plugins.hpp) on `config`.
// Returns when training finished or stopped on a signal; throws ptdp::Error on any failure
// (after aborting the communicators so other ranks fail promptly too).
// A single process without a launcher is RankEnvironment{} with master_addr "127.0.0.1".
TrainOutcome train_rank(const RunConfig& config, const RankEnvironment& rank, const TrainOptions& options);

}  // namespace ptdp
