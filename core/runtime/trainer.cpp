#include "runtime/trainer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>
#include <ptdp/message_text.hpp>

#include "checkpoint/checkpoint_manager.hpp"
#include "checkpoint/checkpoint_space.hpp"
#include "checkpoint/resume_point.hpp"
#include "checkpoint/resumed_model.hpp"
#include "data/run_data.hpp"
#include "data/run_tokenizer.hpp"
#include "launch/tcp_store.hpp"
#include "manifest/model_math.hpp"
#include "manifest/run_config_json.hpp"
#include "metrics/learning_rate.hpp"
#include "metrics/metrics_log.hpp"
#include "metrics/progress_line.hpp"
#include "metrics/schedule_state.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "runtime/device_placement.hpp"
#include "runtime/fp8_scaling.hpp"
#include "runtime/gradient_sync.hpp"
#include "runtime/gradient_zeroing.hpp"
#include "runtime/kernels_precision.hpp"
#include "runtime/loss_scaler.hpp"
#include "runtime/model_chunk.hpp"
#include "runtime/optimizer_state.hpp"
#include "runtime/parameter_init.hpp"
#include "runtime/pipeline_executor.hpp"
#include "runtime/reduction_lane.hpp"
#include "runtime/stop_signal.hpp"
#include "runtime/topology.hpp"
#include "profile/device_profiler_library.hpp"
#include "profile/device_tracks.hpp"
#include "profile/profile_report.hpp"
#include "schedule/chrome_trace.hpp"
#include "schedule/forward_only_schedule.hpp"
#include "schedule/instruction_stream.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {
namespace {

ModelSpec model_spec(const RunConfig& c) {
  ModelSpec m;
  m.layers = c.model.layers;
  m.hidden = c.model.hidden;
  m.heads = c.model.heads;
  m.seq_len = c.model.seq_len;
  m.vocab = c.model.vocab;
  m.padded_vocab = c.model.padded_vocab;
  m.ffn_hidden = c.model.ffn_hidden;
  m.micro_batch = c.parallel.micro_batch;
  m.dropout = c.model.dropout;
  m.layernorm_eps = c.model.layernorm_eps;
  m.seed = c.run.seed;
  return m;
}

// What a divergence error adds about the step that was due to be saved but never proved sound.
std::string unsaved_note(const std::optional<int64_t>& unverified_save) {
  if (!unverified_save) return "";
  return ", and step " + std::to_string(*unverified_save) + ", whose weights gave these gradients, is not saved";
}

class RankTrainer {
 public:
  RankTrainer(const RunConfig& config, const RankEnvironment& id, const TrainOptions& options)
      : cfg_(config), id_(id), options_(options),
        topology_(config.parallel.pipeline, config.parallel.data, config.parallel.tensor),
        me_(topology_.position_of(id.rank)),
        registry_(PluginRegistry::default_search_path(config.plugins.search_path)) {}

  TrainOutcome run();
  void abort(const std::string& reason) {
    if (world_) world_->abort(reason);
    if (lane_) lane_->abort(reason);
    if (store_) store_->closing_after_failure();
  }

 private:
  // Once per run, before the first step.
  int64_t set_up();  // returns the step to start from
  void load_plugins();
  Device place_this_rank() const;
  PluginPlace place() const { return {id_.rank, id_.world_size, id_.local_rank, id_.local_world_size}; }
  CommInit world_init() const;
  void join_world();
  void bind_streams();
  void open_reduction_lane();
  void build_model();
  void initialize_parameters();
  void open_data();
  int64_t open_checkpoints();  // returns the step to start from
  void prepare_steps(int64_t first_step);

  // The steps, and what they report and save.
  TrainOutcome train(int64_t first_step);
  StepMetrics train_step(const StepContext& step);  // fills step, loss, grad_norm and lr
  // Delayed FP8 scaling: the step's amaxes into the history (collective over the world).
  void finish_fp8_step(int64_t step);
  // fp16: the step's overflow (or not) into the loss scale, and the scale into its metrics.
  void update_loss_scale(bool overflow, StepMetrics& sm);
  double step_loss(const Tensor& losses, int microbatches);
  void record_step(const StepMetrics& metrics);  // rank 0: the metrics line and the progress line
  std::optional<double> validation_loss(int64_t completed_steps);  // when validation is due
  double forward_loss(const BatchSampler& batches, int count);  // mean over global batches 0 .. count-1
  void evaluate();
  void checkpoint_when_due(int64_t completed_steps);
  void save_checkpoint(int64_t completed_steps);
  // A step with no next one to show its weights sound (the last, or one a signal stopped after)
  // runs one batch forward first: weights that give no finite loss are not saved.
  void save_after_a_forward(int64_t completed_steps);
  int stop_requested();  // collective over the world: the stop signal some rank received, or 0
  void write_trace(const TimelineRecorder& timeline, const std::vector<DeviceActivity>& device_work);
  // Each rank's table of what its device did in the profiled steps, printed by rank 0.
  void report_profile(const std::vector<DeviceActivity>& device_work, const std::vector<ProfileWindow>& windows);

  const RunConfig& cfg_;
  RankEnvironment id_;
  TrainOptions options_;
  Topology topology_;
  GridPosition me_;
  PluginRegistry registry_;  // the manifest's plugins (and the checkpoint store) load through it
  std::unique_ptr<TcpStore> store_;
  std::shared_ptr<Communicator> world_;
  std::shared_ptr<LayerKernels> kernels_;
  bool blocks_write_first_gradients_ = false;  // the kernels' ABI promises MicroBatch::first_gradient
  std::shared_ptr<Scheduler> scheduler_;
  Device device_;  // where this rank computes, handed to the communicator and the kernels
  std::unique_ptr<DeviceProfiler> profiler_;  // --profile only
  ParallelGroups groups_;
  std::vector<std::unique_ptr<ModelChunk>> chunks_;
  std::vector<ChunkBuffers> buffers_;  // each chunk's master weights and gradients
  std::unique_ptr<OptimizerState> optimizer_;
  std::unique_ptr<Fp8ScalingState> fp8_;  // precision.fp8 = "hybrid" only
  // Delayed FP8: the history a step due to be saved ended with, and that step.
  std::pair<int64_t, std::vector<HostStateTensor>> history_to_save_{-1, {}};
  std::unique_ptr<LossScaler> scaler_;  // precision.params = "fp16" only
  // fp16: the loss scale a step due to be saved ended with, and that step.
  std::pair<int64_t, LossScaleState> scale_to_save_{-1, {}};
  std::optional<RunData> data_;  // none when the loaded model is handed over (sample reads no data)
  std::unique_ptr<CheckpointManager> checkpoints_;
  std::optional<RunTokenizer> tokenizer_;  // recorded in every step saved
  nlohmann::json data_record_;              // RunData::record(), recorded in every step saved
  RunConfig::Optimizer schedule_ = schedule_of(cfg_);  // the learning-rate schedule, as resumed

  // What every step uses, from prepare_steps on.
  InstructionStream training_stream_;      // this stage's part of the verified schedule
  InstructionStream forward_only_stream_;  // the same for validation and eval
  std::optional<BatchSampler> training_batches_;
  std::optional<BatchSampler> validation_batches_;  // only when validation runs (val_fraction may be 0 otherwise)
  std::optional<PipelineExecutor> executor_;
  std::optional<TimelineRecorder> timeline_;
  OwnedTensor losses_;  // F32 [m]: each microbatch's loss
  float loss_scale_ = 0;
  std::unique_ptr<MetricsLog> metrics_;  // rank 0, with --metrics
  std::unique_ptr<ReductionLane> lane_;  // training with d > 1 only
  std::optional<GradientReducer> reducer_;
  std::optional<int64_t> unverified_save_;  // a step due to be saved, once the next one shows it sound
};

int64_t RankTrainer::open_checkpoints() {
  const bool elsewhere = resumes_from_elsewhere(cfg_);
  if (cfg_.checkpoint.dir.empty() && !elsewhere) return 0;
  const auto& info = registry_.load(cfg_.plugins.checkpoint, PluginKind::CheckpointStore, "checkpoint");
  const CheckpointRole role{id_.rank, id_.world_size, me_.dp, me_.tp, me_.pp, topology_.pipeline()};
  auto open_manager = [&](const std::string& dir, bool writing) {
    auto store = create_plugin<CheckpointStore>(info, cfg_.plugins.options.at("checkpoint"), place());
    if (writing) store->open(dir);
    else store->open_existing(dir);
    return std::make_unique<CheckpointManager>(store, *kernels_, role);
  };
  std::vector<int64_t> committed, source_steps;
  if (!cfg_.checkpoint.dir.empty()) {
    checkpoints_ = open_manager(cfg_.checkpoint.dir, true);
    committed = checkpoints_->committed_steps();
  }
  std::unique_ptr<CheckpointManager> source;
  if (elsewhere) {
    source = open_manager(cfg_.checkpoint.resume_from, false);
    source_steps = source->committed_steps();
  }
  const auto resume = resume_point(cfg_, committed, source_steps);
  if (!resume) return 0;
  CheckpointManager& from = source ? *source : *checkpoints_;
  const std::string where = fmt::format("{} step {}", resume->dir, resume->step);
  const nlohmann::json saved = nlohmann::json::parse(from.metadata(resume->step), nullptr, false);
  // Checked before any rank starts (prepare_checkpoint_folder) for ptdp-host's own ranks; again
  // here for ranks an external launcher started.
  check_resumed_model(cfg_, saved, where);
  try {
    check_resumed_tokenizer(saved, tokenizer_, where);
    // Batches are drawn over the files in order: other files mean other batches from here on.
    // (eval scores other data on purpose.)
    if (id_.rank == 0 && options_.eval_batches == 0 && saved.contains("data") && !data_record_.is_null())
      if (const std::string change = data_change(saved["data"], data_record_); !change.empty())
        spdlog::warn("resume: the data differ from those of step {}: {}; the batches from here on are not the ones "
                     "the first run would have drawn",
                     resume->step, change);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: its metadata is damaged: {}", where, json_reason(e.what())));
  }
  // A refusal names the folder, whether or not the store's own message does.
  auto naming_the_folder = [&](const auto& load) {
    try {
      load();
    } catch (const Error& e) {
      if (std::string(e.what()).find(resume->dir) != std::string::npos) throw;
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
  };
  naming_the_folder([&] { from.check(resume->step, optimizer_->whole_params()); });
  naming_the_folder([&] {
    optimizer_->load_each_whole([&](const std::vector<ParamRef>& params) { from.read(resume->step, params); });
  });
  if (fp8_ && fp8_->delayed()) {
    std::vector<std::string> names;
    for (const HostStateTensor& t : fp8_->history()) names.push_back(t.name);
    const std::vector<HostStateTensor> saved_history = from.read_state(resume->step, names);
    if (saved_history.size() < names.size() && me_.dp == 0 && me_.tp == 0)
      spdlog::warn("resume: {} step {} holds the FP8 amax history of {} of this stage's {} FP8 blocks; the others start "
                   "with none (scale 1), as in a run's first step",
                   resume->dir, resume->step, saved_history.size(), names.size());
    fp8_->load_history(saved_history);
  }
  if (scaler_) {
    if (saved.contains("loss_scale"))
      scaler_->restore(loss_scale_from_json(saved["loss_scale"], where));
    else if (id_.rank == 0)
      spdlog::warn("resume: {} holds no loss scale (it was saved without fp16); the scale starts from "
                   "precision.loss_scale_initial = {}",
                   where, cfg_.precision.loss_scale_initial);
  }
  if (id_.rank == 0) spdlog::info("resumed from {} at step {}", resume->dir, resume->step);
  const nlohmann::json saved_schedule = saved.value("schedule", nlohmann::json());
  ResumedSchedule resumed = resume_schedule(cfg_, saved_schedule, resume->step);
  schedule_ = resumed.schedule;
  if (id_.rank == 0)
    for (const std::string& change : resumed.changes) spdlog::warn("resume: {}", change);
  return resume->step;
}

void RankTrainer::save_checkpoint(int64_t completed_steps) {
  nlohmann::json metadata = {
      {"step", completed_steps},
      {"manifest", cfg_.source},
      {"layout", {{"pipeline", topology_.pipeline()}, {"tensor", topology_.tensor()}, {"data", topology_.data()},
                  {"virtual_stages", cfg_.parallel.virtual_stages}}},
      {"model", {{"layers", cfg_.model.layers}, {"hidden", cfg_.model.hidden}, {"heads", cfg_.model.heads},
                 {"seq_len", cfg_.model.seq_len}, {"vocab", cfg_.model.vocab}}},
      {"config", run_config_json(cfg_)},
      {"schedule", schedule_record(schedule_)}};
  if (tokenizer_) metadata["tokenizer"] = tokenizer_->json();
  if (!data_record_.is_null()) metadata["data"] = data_record_;
  if (scaler_)
    metadata["loss_scale"] =
        loss_scale_json(scale_to_save_.first == completed_steps ? scale_to_save_.second : scaler_->state());
  optimizer_->for_each_whole([&](const std::vector<ParamRef>& params) { checkpoints_->write(completed_steps, params); });
  if (fp8_)
    checkpoints_->write_state(completed_steps, history_to_save_.first == completed_steps ? history_to_save_.second
                                                                                        : fp8_->history());
  checkpoints_->commit(completed_steps, metadata.dump(), [this] { world_->barrier(); });
  if (id_.rank != 0) return;
  spdlog::info("checkpoint of step {} committed to {}", completed_steps, cfg_.checkpoint.dir);
  const std::vector<int64_t> removed = checkpoints_->keep_newest(cfg_.checkpoint.keep);
  if (!removed.empty())
    spdlog::info("checkpoint.keep = {}: deleted step{} {}", cfg_.checkpoint.keep, removed.size() > 1 ? "s" : "",
                 step_list(removed));
}

void RankTrainer::load_plugins() {
  const auto& comm_info = registry_.load(cfg_.plugins.communicator, PluginKind::Communicator, "communicator");
  const auto& kernels_info = registry_.load(cfg_.plugins.kernels, PluginKind::LayerKernels, "kernels");
  const auto& sched_info = registry_.load(cfg_.plugins.scheduler, PluginKind::Scheduler, "scheduler");
  world_ = create_plugin<Communicator>(comm_info, cfg_.plugins.options.at("communicator"), place());
  kernels_ = create_plugin<LayerKernels>(kernels_info, cfg_.plugins.options.at("kernels"), place());
  blocks_write_first_gradients_ = blocks_write_first_gradients(kernels_info.descriptor->abi_minor);
  scheduler_ = create_plugin<Scheduler>(sched_info, cfg_.plugins.options.at("scheduler"), place());
  check_kernels_precision(cfg_, kernels_info.descriptor->abi_minor, *kernels_);
  // Whether the communicator moves the kernels' memory was checked before this rank started
  // (check_manifest_plugins, which every caller of train_rank runs first).
}

Device RankTrainer::place_this_rank() const {
  PlacementRequest request;
  request.kind = kernels_->device().kind;
  request.devices_visible = kernels_->device_count();
  request.local_rank = id_.local_rank;
  request.local_world_size = id_.local_world_size;
  request.ranks_per_gpu = cfg_.launch.ranks_per_gpu;
  request.kernels = cfg_.plugins.kernels;
  request.communicator = cfg_.plugins.communicator;
  request.comm_capabilities = world_->capabilities();
  return place_rank(request);
}

void RankTrainer::bind_streams() {
  // Transfers and collectives of device memory are ordered with the kernels that produce and
  // consume it: every group enqueues on the kernels' stream.
  void* stream = kernels_->stream();
  for (Communicator* c : {groups_.world.get(), groups_.tensor.get(), groups_.data.get(), groups_.pipeline.get(),
                          groups_.model.get(), groups_.embedding.get()})
    if (c) c->bind_stream(stream);
}

void RankTrainer::build_model() {
  const int p = cfg_.parallel.pipeline, v = cfg_.parallel.virtual_stages;
  KernelsBinding binding;
  binding.model = model_spec(cfg_);
  binding.tp_rank = me_.tp;
  binding.tp_size = topology_.tensor();
  binding.tp = groups_.tensor.get();
  binding.device_index = device_.index;
  binding.fp8 = fp8_recipe_of(cfg_);
  binding.working = working_type_of(cfg_);
  kernels_->bind(binding);
  const int every = cfg_.parallel.recompute == "full" ? cfg_.parallel.recompute_every : 0;
  for (int c = 0; c < v; ++c) {
    const ChunkLayout layout = chunk_layout(cfg_.model.layers, p, v, me_.pp, c);
    EmbeddingLayer* tied = (layout.has_head && !chunks_.empty()) ? chunks_.front()->embedding() : nullptr;
    chunks_.push_back(std::make_unique<ModelChunk>(*kernels_, layout, binding.model, every, tied));
  }
  // Each chunk's parameters move into its buffers; the tied word embedding's gradient gets a
  // bucket of its own where the embedding group sums it at the flush.
  std::vector<ParamRef> placed;
  for (auto& chunk : chunks_) {
    buffers_.emplace_back(*kernels_, chunk->parameters(), chunk->parameter_layers(), groups_.embedding != nullptr,
                          cfg_.parallel.bucket_elements, topology_.data(), !cfg_.parallel.distributed_optimizer);
    placed.insert(placed.end(), buffers_.back().params().begin(), buffers_.back().params().end());
  }
  kernels_->place_parameters(placed);
  if (binding.fp8.enabled) {
    std::vector<std::pair<int, TransformerBlock*>> blocks;
    for (const auto& chunk : chunks_)
      for (const auto& block : chunk->blocks()) blocks.push_back(block);
    fp8_ = std::make_unique<Fp8ScalingState>(*kernels_, binding.fp8, cfg_.model.layers, blocks);
  }
  if (cfg_.precision.fp16()) scaler_ = std::make_unique<LossScaler>(cfg_.precision);
  optimizer_ = std::make_unique<OptimizerState>(*kernels_, groups_, buffers_, cfg_.parallel.distributed_optimizer);
  if (id_.rank == 0) {
    int64_t gradients = 0;
    for (const ChunkBuffers& b : buffers_) gradients += b.layout().size * static_cast<int64_t>(sizeof(float));
    auto size = [](int64_t bytes) { return fmt::format("{} ({} bytes)", byte_size(bytes), bytes); };
    spdlog::info("rank 0 holds fp32 master weights {}, gradients {}, Adam moments {}{}", size(optimizer_->master_bytes()),
                 size(gradients), size(optimizer_->moment_bytes()),
                 optimizer_->distributed()
                     ? fmt::format(" (master weights and moments: its 1/{} shard, distributed optimizer)", topology_.data())
                     : "");
  }
}

void RankTrainer::initialize_parameters() {
  optimizer_->load_each_whole([&](const std::vector<ParamRef>& params) {
    for (const ParamRef& p : params) {
      const std::vector<float> values = initial_values(p, cfg_.run.seed, cfg_.model.layers, cfg_.model.vocab);
      kernels_->copy_from_host(p.master, values.data());
    }
  });
}

double RankTrainer::step_loss(const Tensor& losses, int microbatches) {
  // The last stage holds the losses; average over microbatches and data-parallel replicas, then
  // hand the value to every stage of the pipeline.
  double loss = 0;
  if (me_.pp == topology_.pipeline() - 1) {
    std::vector<float> host(static_cast<size_t>(microbatches));
    kernels_->copy_to_host(host.data(), losses);
    for (float l : host) loss += l;
    loss /= microbatches;
    loss = all_reduce_scalar(*kernels_, *groups_.data, loss, ReduceOp::Sum) / topology_.data();
  }
  if (topology_.pipeline() > 1) {
    float v = static_cast<float>(loss);
    OwnedTensor buffer = kernels_->allocate({1}, DType::F32);
    kernels_->copy_from_host(buffer.view, &v);
    groups_.pipeline->broadcast(buffer.view, topology_.pipeline() - 1);
    kernels_->copy_to_host(&v, buffer.view);
    loss = v;
  }
  return loss;
}

void RankTrainer::write_trace(const TimelineRecorder& timeline, const std::vector<DeviceActivity>& device_work) {
  nlohmann::json spans = nlohmann::json::array();
  for (const auto& s : timeline.spans())
    spans.push_back({{"name", s.name}, {"cat", s.category}, {"ts", s.start_us}, {"dur", s.duration_us},
                     {"lane", s.on_reduction_lane}});
  // The device's records keep their own clock; each rank's are shifted by its own origin.
  const nlohmann::json mine = {{"spans", spans}, {"origin_us", timeline.origin_us()},
                               {"device", nlohmann::json::parse(device_activities_to_json(device_work))}};
  const std::string text = mine.dump();
  store_->set(fmt::format("trace/{}", id_.rank), std::vector<uint8_t>(text.begin(), text.end()));
  if (id_.rank != 0) return;
  ChromeTrace trace;
  for (int r = 0; r < id_.world_size; ++r) {
    const auto bytes = store_->get(fmt::format("trace/{}", r), std::chrono::milliseconds(
                                                                   static_cast<int64_t>(cfg_.launch.timeout_s * 1000)));
    const auto pos = topology_.position_of(r);
    trace.set_process_name(r, fmt::format("rank {} (pp {}, dp {}, tp {})", r, pos.pp, pos.dp, pos.tp));
    const auto rank = nlohmann::json::parse(bytes.begin(), bytes.end());
    // Thread 0: the ops; 1: the data-parallel reduction lane; 2 on: the device's streams.
    bool lane = false;
    for (const auto& s : rank.at("spans")) {
      lane = lane || s["lane"].get<bool>();
      trace.add_span(s["name"].get<std::string>(), s["cat"].get<std::string>(), r, s["lane"].get<bool>() ? 1 : 0,
                     s["ts"].get<double>(), s["dur"].get<double>());
    }
    const auto device = device_activities_from_json(rank.at("device").dump());
    if (lane || !device.empty()) trace.set_thread_name(r, 0, "ops");
    if (lane) trace.set_thread_name(r, 1, "data-parallel reduction");
    if (!device.empty()) add_device_tracks(trace, r, device, rank.at("origin_us").get<double>(), 2);
  }
  trace.write(options_.trace_path);
  spdlog::info("trace of {} ranks written to {}", id_.world_size, options_.trace_path);
}

void RankTrainer::report_profile(const std::vector<DeviceActivity>& device_work,
                                 const std::vector<ProfileWindow>& windows) {
  const ProfileReport report = build_profile_report(device_work, profiler_->take_samples(), windows,
                                                    model_work(cfg_, id_.world_size), profiler_->peaks());
  const auto pos = topology_.position_of(id_.rank);
  const std::string text =
      format_profile_report(report, fmt::format("rank {} (pp {}, dp {}, tp {})", id_.rank, pos.pp, pos.dp, pos.tp));
  store_->set(fmt::format("profile/{}", id_.rank), std::vector<uint8_t>(text.begin(), text.end()));
  if (id_.rank != 0) return;
  for (int r = 0; r < id_.world_size; ++r) {
    const auto bytes = store_->get(fmt::format("profile/{}", r), std::chrono::milliseconds(
                                                                     static_cast<int64_t>(cfg_.launch.timeout_s * 1000)));
    spdlog::info("{}", std::string(bytes.begin(), bytes.end()));
  }
}

TrainOutcome RankTrainer::run() {
  const int64_t first_step = set_up();
  if (options_.use_loaded_model) {
    PTDP_CHECK(id_.world_size == 1 && chunks_.size() == 1, "a loaded model is handed over on one rank only");
    options_.use_loaded_model(*kernels_, *chunks_.front(), model_spec(cfg_));
    return TrainOutcome::Finished;
  }
  prepare_steps(first_step);
  // With eval_batches the run only evaluates the model it loaded.
  if (options_.eval_batches > 0) evaluate();
  else if (train(first_step) == TrainOutcome::StoppedBySignal) return TrainOutcome::StoppedBySignal;
  world_->barrier();
  return TrainOutcome::Finished;
}

int64_t RankTrainer::set_up() {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg_.launch.timeout_s * 1000));
  store_ = std::make_unique<TcpStore>(id_.master_addr, id_.master_port, id_.rank, id_.world_size, timeout);
  load_plugins();
  device_ = place_this_rank();
  // Before the device is first used, so that the profiler sees every kernel of the process.
  if (options_.profile)
    profiler_ = open_device_profiler(PluginRegistry::default_search_path(cfg_.plugins.search_path), device_,
                                     cfg_.plugins.kernels);
  join_world();
  build_model();
  bind_streams();
  initialize_parameters();
  // A loaded model handed to the caller (sample) reads no data.
  if (!options_.use_loaded_model) open_data();
  return open_checkpoints();
}

CommInit RankTrainer::world_init() const {
  CommInit init;
  init.rank = id_.rank;
  init.size = id_.world_size;
  init.store = store_.get();
  init.key_prefix = "world";
  init.timeout_s = cfg_.launch.timeout_s;
  init.device = device_;
  return init;
}

void RankTrainer::join_world() {
  world_->init(world_init());
  groups_ = build_parallel_groups(world_, topology_);
}

void RankTrainer::open_reduction_lane() {
  if (topology_.data() == 1) return;
  const auto& info = registry_.load(cfg_.plugins.communicator, PluginKind::Communicator, "communicator");
  CommInit init = world_init();
  init.key_prefix = "reduction-lane";
  lane_ = std::make_unique<ReductionLane>(create_plugin<Communicator>(info, cfg_.plugins.options.at("communicator"), place()),
                                          init, topology_, *kernels_);
}

void RankTrainer::open_data() {
  data_.emplace(RunData::open(cfg_));
  tokenizer_ = run_tokenizer(cfg_, *data_);
  data_record_ = data_->record();
}

void RankTrainer::prepare_steps(int64_t first_step) {
  const int p = cfg_.parallel.pipeline, v = cfg_.parallel.virtual_stages, m = cfg_.parallel.microbatches();
  const ScheduleShape shape{p, v, m};
  const PipelineSchedule schedule = plan_schedule(*scheduler_, shape);
  if (id_.rank == 0)
    spdlog::info("schedule {} verified: p={} v={} m={}, bubble (p-1)/(v*m) = {:.4f}, peak activations on stage 0: {}",
                 cfg_.plugins.scheduler, p, v, m, formula_bubble_fraction(shape), schedule.report.peak_activations.at(0));
  training_stream_ = schedule.streams.at(me_.pp);
  forward_only_stream_ = verified_forward_only_streams(shape).at(me_.pp);

  training_batches_.emplace(data_->training(cfg_.model.seq_len, cfg_.run.seed, cfg_.data.val_fraction));
  if (cfg_.data.val_every > 0)
    validation_batches_.emplace(data_->validation_batches(cfg_.model.seq_len, cfg_.run.seed, cfg_.data.val_fraction));

  executor_.emplace(*kernels_, groups_, topology_, m, cfg_.parallel.scatter_gather, chunks_, model_spec(cfg_),
                    cfg_.parallel.global_batch / topology_.data(), blocks_write_first_gradients_);
  timeline_.emplace(*kernels_, /*wait_for_device=*/!profiler_);
  losses_ = kernels_->allocate({m}, DType::F32);
  loss_scale_ = 1.0f / static_cast<float>(m * topology_.data());
  if (id_.rank == 0 && !options_.metrics_path.empty()) {
    metrics_ = std::make_unique<MetricsLog>(options_.metrics_path, /*append=*/first_step > 0);
    metrics_->write_header(make_run_header(cfg_, registry_, device_));
  }
  if (options_.eval_batches > 0) return;  // evaluation computes no gradients
  open_reduction_lane();
  std::vector<std::vector<Tensor>> zeroed;
  for (size_t c = 0; c < chunks_.size(); ++c)
    zeroed.push_back(gradients_to_zero(buffers_[c], chunks_[c]->layout(), blocks_write_first_gradients_));
  reducer_.emplace(*kernels_, groups_, buffers_, std::move(zeroed), optimizer_->distributed(), lane_.get(),
                   *timeline_);
  executor_->on_gradients_final([this](int chunk, int layer) { reducer_->layer_final(chunk, layer); });
  if (lane_ && optimizer_->distributed() && cfg_.parallel.overlap_param_gather) {
    optimizer_->gather_on_lane(*lane_, *timeline_);
    executor_->on_layer_starting([this](int chunk, int layer) { optimizer_->weights_needed(chunk, layer); });
  }
}

TrainOutcome RankTrainer::train(int64_t first_step) {
  const auto start = std::chrono::steady_clock::now();
  const bool tracing = !options_.trace_path.empty();
  // Trace steps after the first one (warm-up) when the run has more than one step.
  const int64_t trace_begin = first_step + (cfg_.run.steps - first_step > 1 ? 1 : 0);
  const int64_t trace_end = std::min<int64_t>(cfg_.run.steps, trace_begin + options_.trace_steps);
  const double flops = flops_per_step(cfg_);
  const int64_t tokens_per_step = static_cast<int64_t>(cfg_.parallel.global_batch) * cfg_.model.seq_len;
  std::vector<ProfileWindow> profiled_steps;
  // The profiler records from the step before the first profiled one on: the CUDA calls that
  // follow enabling it are slow, and inside a profiled step they would read as idle device time.
  // It stops after the last one; what it records between and before them is cut away.
  const int64_t profile_from = std::max(first_step, trace_begin - 1);
  auto steady_us = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
  };
  for (int64_t step = first_step; step < cfg_.run.steps; ++step) {
    const auto step_start = std::chrono::steady_clock::now();
    const bool traced = step >= trace_begin && step < trace_end;
    timeline_->set_enabled(tracing && traced);
    const bool profiled = profiler_ && traced;
    if (profiler_ && step == profile_from) profiler_->start();
    if (profiled) profiled_steps.push_back({steady_us(step_start), 0});
    // Under fp16 the head's backward also multiplies by the loss scale S: S/(m·d).
    const float loss_scale = loss_scale_ * (scaler_ ? scaler_->scale() : 1.0f);
    StepMetrics sm = train_step({step, training_stream_, *training_batches_, losses_.view, loss_scale, true, *timeline_});
    if (profiled) profiled_steps.back().end_us = steady_us(std::chrono::steady_clock::now());
    if (profiled && step == trace_end - 1) profiler_->stop();  // train_step waited for the device
    if (!std::isfinite(sm.loss))
      throw Error(fmt::format("step {}: loss is {}; stopping, and this step is not saved", step + 1, sm.loss));
    const auto now = std::chrono::steady_clock::now();
    sm.step_time_s = std::chrono::duration<double>(now - step_start).count();
    sm.elapsed_s = std::chrono::duration<double>(now - start).count();
    sm.tokens_per_s = static_cast<double>(tokens_per_step) / sm.step_time_s;
    sm.tflops_per_gpu = flops / sm.step_time_s / id_.world_size / 1e12;
    sm.val_loss = validation_loss(step + 1);
    record_step(sm);
    if (step == trace_end - 1 && (tracing || profiler_)) {
      const std::vector<DeviceActivity> device_work =
          profiler_ ? activities_in(profiler_->take_activities(), profiled_steps) : std::vector<DeviceActivity>{};
      if (profiler_) report_profile(device_work, profiled_steps);
      if (tracing) write_trace(*timeline_, device_work);
    }
    checkpoint_when_due(step + 1);
    const int stop = step + 1 < cfg_.run.steps ? stop_requested() : 0;
    if (stop != 0) {
      if (checkpoints_) save_after_a_forward(step + 1);
      optimizer_->take_all_weights();
      if (id_.rank == 0)
        spdlog::warn("stopped by {} after step {}/{}: {}", signal_name(stop), step + 1, cfg_.run.steps,
                     checkpoints_ ? "a resume continues from its checkpoint"
                                  : "no checkpoint.dir, so nothing was saved");
      world_->barrier();
      return TrainOutcome::StoppedBySignal;
    }
  }
  optimizer_->take_all_weights();  // the trained weights, in the backend, before the run ends
  return TrainOutcome::Finished;
}

StepMetrics RankTrainer::train_step(const StepContext& step) {
  reducer_->begin_step(!optimizer_->weights_pending());
  if (fp8_) fp8_->begin_step();
  executor_->run(step);
  reducer_->finish();
  if (fp8_ && fp8_->delayed()) {
    // The step due to be saved is saved below, once these gradients prove it sound: with the
    // history it ended with, not the one this step is about to extend.
    if (unverified_save_) history_to_save_ = {*unverified_save_, fp8_->history()};
    finish_fp8_step(step.step);
  }
  AdamStep adam;
  step.timeline.span("grad norm", "collective",
                     [&] { adam.grad_sum_squares = optimizer_->grad_sum_squares(me_, topology_.pipeline()); });
  adam.step = step.step + 1;
  adam.lr = static_cast<float>(learning_rate(schedule_, step.step, schedule_.decay_steps));
  adam.beta1 = static_cast<float>(cfg_.optimizer.beta1);
  adam.beta2 = static_cast<float>(cfg_.optimizer.beta2);
  adam.eps = static_cast<float>(cfg_.optimizer.eps);
  adam.weight_decay = cfg_.optimizer.type == "adamw" ? static_cast<float>(cfg_.optimizer.weight_decay) : 0.0f;
  // The kernels read the norm and clip on the device, and update nothing when it is not finite,
  // so the host reads it only after the update is queued.
  adam.max_grad_norm = static_cast<float>(std::max(0.0, cfg_.optimizer.grad_clip));
  // Under fp16 the gradients carry the loss scale, which Adam divides out; the norm the host
  // reads is the sum's root over it, the true gradients' norm.
  adam.loss_scale = scaler_ ? scaler_->scale() : 1.0f;
  auto read_grad_norm = [&] { return optimizer_->read_grad_norm() / adam.loss_scale; };
  auto refuse_non_finite = [&](double grad_norm) {
    if (std::isfinite(grad_norm)) return;
    const std::string amax = fp8_ ? fp8_->first_non_finite_amax() : "";
    throw Error(fmt::format("step {}: gradient norm is {}{}; stopping before the weights are corrupted{}", step.step + 1,
                            grad_norm, amax.empty() ? "" : ", and the FP8 amax of " + amax + " is not finite",
                            unsaved_note(unverified_save_)));
  };
  if (unverified_save_) {
    // These gradients came from the weights of the previous step; if they are finite, that step
    // is sound, and its weights and moments are still untouched until the update below. Under
    // fp16 an overflow proves nothing either way: the step is skipped, the weights stay those of
    // the step due to be saved, and the save waits for a step whose gradients are finite (or is
    // superseded by the next step due, which holds the same weights).
    const double norm = read_grad_norm();
    if (!scaler_ || std::isfinite(norm)) {
      refuse_non_finite(norm);
      save_checkpoint(*unverified_save_);
      unverified_save_.reset();
    }
  }
  step.timeline.span("optimizer step", "optimizer", [&] { optimizer_->step(adam); });
  StepMetrics sm;
  sm.step = step.step + 1;
  sm.loss = step_loss(step.losses, cfg_.parallel.microbatches());
  const double grad_norm = read_grad_norm();
  // A norm that is not finite left everything as it was: under fp16 the step is skipped, else
  // the run stops.
  if (scaler_) update_loss_scale(!std::isfinite(grad_norm), sm);
  else refuse_non_finite(grad_norm);
  sm.grad_norm = grad_norm;
  sm.lr = adam.lr;
  kernels_->synchronize();
  return sm;
}

void RankTrainer::finish_fp8_step(int64_t step) {
  // Every rank learns whether any stage met a non-finite amax, so that all stop at this step,
  // before the optimizer step, with the weights and the amax history as they were.
  const std::string non_finite = fp8_->finish_step(groups_);
  const double anywhere = all_reduce_scalar(*kernels_, *world_, non_finite.empty() ? 0.0 : 1.0, ReduceOp::Max);
  if (anywhere == 0) return;
  throw Error(fmt::format("step {}: {}; stopping before the weights are corrupted{}", step + 1,
                          non_finite.empty() ? "an FP8 amax on another rank is not finite"
                                             : "the FP8 amax of " + non_finite + " is not finite",
                          unsaved_note(unverified_save_)));
}

void RankTrainer::update_loss_scale(bool overflow, StepMetrics& sm) {
  const LossScaleUpdate update = scaler_->update(overflow);
  if (update.below_minimum)
    throw Error(below_minimum_error(sm.step, update, cfg_.precision.loss_scale_min) + unsaved_note(unverified_save_));
  if (update.skipped && id_.rank == 0)
    spdlog::info("{}", overflow_line(sm.step, update, cfg_.precision.loss_scale_hysteresis));
  sm.loss_scale = update.scale_before;
  sm.skipped = update.skipped;
  sm.steps_skipped = scaler_->state().skipped_steps;
}

void RankTrainer::record_step(const StepMetrics& sm) {
  if (id_.rank != 0) return;
  if (metrics_) metrics_->write(sm);
  if (sm.step % cfg_.run.log_every == 0 || sm.step == cfg_.run.steps || sm.step == 1)
    spdlog::info("{}", progress_line(sm, cfg_.run.steps, sm.elapsed_s));
}

std::optional<double> RankTrainer::validation_loss(int64_t completed_steps) {
  const int every = cfg_.data.val_every;
  if (every <= 0 || (completed_steps % every != 0 && completed_steps != cfg_.run.steps)) return std::nullopt;
  return forward_loss(*validation_batches_, cfg_.data.val_batches);
}

double RankTrainer::forward_loss(const BatchSampler& batches, int count) {
  double total = 0;
  for (int k = 0; k < count; ++k) {
    executor_->run({k, forward_only_stream_, batches, losses_.view, 0.0f, false, *timeline_});
    total += step_loss(losses_.view, cfg_.parallel.microbatches());
  }
  return total / count;
}

void RankTrainer::evaluate() {
  // The whole file, not a split of it: what `ptdp-host eval` measures.
  const BatchSampler whole = data_->everything(cfg_.model.seq_len, cfg_.run.seed);
  const double loss = forward_loss(whole, options_.eval_batches);
  if (!std::isfinite(loss))
    throw Error(fmt::format("eval {}: the loss is {}: the model's weights give no finite loss (a diverged step?)",
                            data_->train.front().corpus.name(), loss));
  if (id_.rank == 0)
    spdlog::info("eval {} | loss {:.6f} | perplexity {:.4f} | {} batches of {} tokens", data_->train.front().corpus.name(),
                 loss, std::exp(loss), options_.eval_batches,
                 static_cast<int64_t>(cfg_.parallel.global_batch) * cfg_.model.seq_len);
}

void RankTrainer::checkpoint_when_due(int64_t completed_steps) {
  const bool last = completed_steps == cfg_.run.steps;
  if (!checkpoints_ || cfg_.checkpoint.every <= 0 || (completed_steps % cfg_.checkpoint.every != 0 && !last)) return;
  // A step is saved once the next one has shown its weights give finite gradients, so a
  // diverged model never becomes the newest checkpoint; the last step has no next one.
  if (last) {
    save_after_a_forward(completed_steps);
    return;
  }
  unverified_save_ = completed_steps;
  if (scaler_) scale_to_save_ = {completed_steps, scaler_->state()};
}

void RankTrainer::save_after_a_forward(int64_t completed_steps) {
  const double loss = forward_loss(*training_batches_, 1);
  if (!std::isfinite(loss))
    throw Error(fmt::format("step {}: its weights give a loss of {} on a training batch; stopping, and this step is "
                            "not saved",
                            completed_steps, loss));
  save_checkpoint(completed_steps);
}

int RankTrainer::stop_requested() {
  // Ranks see a signal at different moments; they stop after the same step, or the ones still
  // training would wait forever for the ones saving. The signal itself travels too, so that rank 0
  // names it when another rank got it (SIGTERM sent to one rank).
  const double here = StopSignal::received();
  return static_cast<int>(all_reduce_scalar(*kernels_, *world_, here, ReduceOp::Max));
}

}  // namespace

TrainOutcome train_rank(const RunConfig& config, const RankEnvironment& rank, const TrainOptions& options) {
  const StopSignal stop_signal;
  RankTrainer trainer(config, rank, options);
  try {
    return trainer.run();
  } catch (const std::exception& e) {
    trainer.abort(e.what());
    throw;
  }
}

}  // namespace ptdp
