#pragma once
// What one rank makes once, before its first step, in this order: the rendezvous store, the
// manifest's plugins, the device it computes on (and the device profiler for --profile), the
// world and its groups, the model chunks with their buffers and optimizer state, the data, and
// the checkpoint it resumes from. The step loop (trainer.cpp) runs on what it holds.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <ptdp/device_profiler.hpp>

#include "checkpoint/checkpoint_manager.hpp"
#include "data/run_data.hpp"
#include "data/run_tokenizer.hpp"
#include "launch/tcp_store.hpp"
#include "plugin/manifest_plugin_set.hpp"
#include "runtime/chunk_buffers.hpp"
#include "runtime/fp8_scaling.hpp"
#include "runtime/loss_scaler.hpp"
#include "runtime/model_chunk.hpp"
#include "runtime/optimizer_state.hpp"
#include "runtime/comm_lane.hpp"
#include "runtime/topology.hpp"
#include "runtime/traced_communicator.hpp"
#include "runtime/trainer.hpp"

namespace ptdp {

class RankSetup {
 public:
  RankSetup(const RunConfig& config, const RankEnvironment& id, const TrainOptions& options);

  // Makes everything above; returns the step to start from. What was made before a failure stays,
  // so that abort() can tell the other ranks.
  int64_t set_up();
  // The data-parallel reduction lane (training with d > 1 only), once the model is built.
  void open_reduction_lane();
  // The pipeline transfer lane (p > 1 on host memory only), once the model is built.
  void open_transfer_lane();
  // Fails this rank's collectives and its store, so that the other ranks fail promptly too.
  void abort(const std::string& reason);

  const RunConfig& cfg;
  const RankEnvironment id;
  const TrainOptions& options;
  const Topology topology;
  const GridPosition me;
  const ModelSpec model;
  PluginRegistry registry;  // the manifest's plugins (and the checkpoint store) load through it
  std::unique_ptr<TcpStore> store;
  std::shared_ptr<Communicator> world;
  std::shared_ptr<LayerKernels> kernels;
  bool kernels_write_first_gradients = false;  // the kernels' ABI promises MicroBatch::first_gradient
  bool kernels_split_backward = false;         // the blocks run backward_input and backward_weight
  bool kernels_transfer_stream = false;        // the kernels' ABI has LayerKernels::transfer_stream
  std::shared_ptr<Scheduler> scheduler;
  Device device;  // where this rank computes, handed to the communicator and the kernels
  std::shared_ptr<DeviceProfiler> profiler;  // --profile only
  ParallelGroups groups;
  // The tensor group as the kernels plugin is handed it: its collectives show in the trace.
  std::shared_ptr<TracedCommunicator> kernels_tensor_group;
  std::vector<std::unique_ptr<ModelChunk>> chunks;
  std::vector<ChunkBuffers> buffers;  // each chunk's master weights and gradients
  std::unique_ptr<OptimizerState> optimizer;
  std::unique_ptr<Fp8ScalingState> fp8;  // precision.fp8 = "hybrid" only
  std::unique_ptr<LossScaler> scaler;    // precision.params = "fp16" only
  std::optional<RunData> data;  // none when the loaded model is handed over (sample reads no data)
  std::unique_ptr<CheckpointManager> checkpoints;
  std::optional<RunTokenizer> tokenizer;  // recorded in every step saved
  nlohmann::json data_record;              // RunData::record(), recorded in every step saved
  RunConfig::Optimizer lr_schedule;        // the learning-rate schedule, as resumed
  std::unique_ptr<CommLane> lane;            // the data-parallel reduction: training with d > 1 only
  std::unique_ptr<CommLane> transfer_lane;   // the pipeline transfers: p > 1 on host memory only

 private:
  PluginPlace place() const { return {id.rank, id.world_size, id.local_rank, id.local_world_size}; }
  CommInit world_init() const;
  void load_plugins();
  Device place_this_rank() const;
  void join_world();
  void bind_streams();
  void build_model();
  void initialize_parameters();
  void open_data();
  int64_t open_checkpoints();  // returns the step to start from

  std::optional<ManifestPluginSet> plugins_;
};

// The model as the kernels plugin is bound to it.
ModelSpec model_spec_of(const RunConfig& config);

}  // namespace ptdp
