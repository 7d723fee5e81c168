#include "runtime/rank_setup.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ptdp/message_text.hpp>

#include "checkpoint/checkpoint_space.hpp"
#include "checkpoint/resume_point.hpp"
#include "checkpoint/resumed_model.hpp"
#include "metrics/schedule_state.hpp"
#include "profile/device_profiler_library.hpp"
#include "runtime/device_placement.hpp"
#include "runtime/gradient_zeroing.hpp"
#include "runtime/kernels_activation_memory.hpp"
#include "runtime/kernels_backward_split.hpp"
#include "runtime/kernels_precision.hpp"
#include "runtime/parameter_init.hpp"

namespace ptdp {

ModelSpec model_spec_of(const RunConfig& c) {
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

RankSetup::RankSetup(const RunConfig& config, const RankEnvironment& rank, const TrainOptions& train_options)
    : cfg(config), id(rank), options(train_options),
      topology(config.parallel.pipeline, config.parallel.data, config.parallel.tensor),
      me(topology.position_of(rank.rank)),
      model(model_spec_of(config)),
      registry(PluginRegistry::default_search_path(config.plugins.search_path)),
      lr_schedule(schedule_of(config)) {}

void RankSetup::abort(const std::string& reason) {
  if (world) world->abort(reason);
  if (lane) lane->abort(reason);
  if (transfer_lane) transfer_lane->abort(reason);
  if (store) store->closing_after_failure();
}

int64_t RankSetup::set_up() {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg.launch.timeout_s * 1000));
  store = std::make_unique<TcpStore>(id.master_addr, id.master_port, id.rank, id.world_size, timeout);
  load_plugins();
  device = place_this_rank();
  // Before the device is first used, so that the profiler sees every kernel of the process.
  if (options.profile)
    profiler = open_device_profiler(registry.search_path(), device, cfg.plugins.kernels);
  join_world();
  build_model();
  bind_streams();
  initialize_parameters();
  // A loaded model handed to the caller (sample) reads no data.
  if (!options.use_loaded_model) open_data();
  return open_checkpoints();
}

void RankSetup::load_plugins() {
  // The checkpoint store only for a run that saves or resumes.
  const bool checkpointing = !cfg.checkpoint.dir.empty() || resumes_from_elsewhere(cfg);
  plugins_.emplace(load_manifest_plugins(registry, cfg.plugins, checkpointing));
  const uint32_t kernels_abi_minor = plugins_->at(PluginKind::LayerKernels).info->descriptor->abi_minor;
  world = plugins_->create<Communicator>(place());
  kernels = plugins_->create<LayerKernels>(place());
  kernels_write_first_gradients = blocks_write_first_gradients(kernels_abi_minor);
  kernels_split_backward = blocks_split_backward(kernels_abi_minor, *kernels);
  kernels_transfer_stream = kernels_abi_minor >= 10;
  scheduler = plugins_->create<Scheduler>(place());
  check_kernels_precision(cfg, kernels_abi_minor, *kernels);
  check_kernels_activation_memory(cfg, kernels_abi_minor, *kernels);
  // Whether the communicator moves the kernels' memory was checked before this rank started
  // (check_manifest_plugins, which every caller of train_rank runs first).
}

Device RankSetup::place_this_rank() const {
  PlacementRequest request;
  request.kind = kernels->device().kind;
  request.devices_visible = kernels->device_count();
  request.local_rank = id.local_rank;
  request.local_world_size = id.local_world_size;
  request.ranks_per_gpu = cfg.launch.ranks_per_gpu;
  request.kernels = cfg.plugins.kernels;
  request.communicator = cfg.plugins.communicator;
  request.comm_capabilities = world->capabilities();
  return place_rank(request);
}

CommInit RankSetup::world_init() const {
  CommInit init;
  init.rank = id.rank;
  init.size = id.world_size;
  init.store = store.get();
  init.key_prefix = "world";
  init.timeout_s = cfg.launch.timeout_s;
  init.device = device;
  return init;
}

void RankSetup::join_world() {
  world->init(world_init());
  groups = build_parallel_groups(world, topology);
}

void RankSetup::bind_streams() {
  // Transfers and collectives of device memory are ordered with the kernels that produce and
  // consume it: every group enqueues on the kernels' stream.
  void* stream = kernels->stream();
  for (Communicator* c : {groups.world.get(), groups.tensor.get(), groups.data.get(), groups.pipeline.get(),
                          groups.model.get(), groups.embedding.get()})
    if (c) c->bind_stream(stream);
}

namespace {
// The rows of the sequence an activation between layers holds on this rank.
int64_t activation_rows(const RunConfig& cfg) {
  return cfg.parallel.sequence_parallel ? cfg.model.seq_len / cfg.parallel.tensor : cfg.model.seq_len;
}
}  // namespace

void RankSetup::build_model() {
  const int p = cfg.parallel.pipeline, v = cfg.parallel.virtual_stages;
  KernelsBinding binding;
  binding.model = model;
  binding.tp_rank = me.tp;
  binding.tp_size = topology.tensor();
  kernels_tensor_group = std::make_shared<TracedCommunicator>(groups.tensor, "tp");
  binding.tp = kernels_tensor_group.get();
  binding.device_index = device.index;
  binding.fp8 = fp8_recipe_of(cfg);
  binding.working = working_type_of(cfg);
  binding.sequence_parallel = cfg.parallel.sequence_parallel;
  binding.recompute_modules = recompute_modules_of(cfg);
  binding.core_places_parameters = true;  // right below, before anything else uses them
  kernels->bind(binding);
  const int every = cfg.parallel.full_recompute() ? cfg.parallel.recompute_every : 0;
  for (int c = 0; c < v; ++c) {
    const ChunkLayout layout = chunk_layout(cfg.model.layers, p, v, me.pp, c);
    EmbeddingLayer* tied = (layout.has_head && !chunks.empty()) ? chunks.front()->embedding() : nullptr;
    chunks.push_back(std::make_unique<ModelChunk>(*kernels, layout, binding.model, every, tied, activation_rows(cfg),
                                                  kernels_split_backward));
  }
  // Each chunk's parameters move into its buffers; the tied word embedding's gradient gets a
  // bucket of its own where the embedding group sums it at the flush.
  std::vector<ParamRef> placed;
  for (auto& chunk : chunks) {
    buffers.emplace_back(*kernels, chunk->parameters(), chunk->parameter_layers(), groups.embedding != nullptr,
                          cfg.parallel.bucket_elements, topology.data(), !cfg.parallel.distributed_optimizer);
    placed.insert(placed.end(), buffers.back().params().begin(), buffers.back().params().end());
  }
  kernels->place_parameters(placed);
  if (binding.fp8.enabled) {
    std::vector<std::pair<int, TransformerBlock*>> blocks;
    for (const auto& chunk : chunks)
      for (const auto& block : chunk->blocks()) blocks.push_back(block);
    fp8 = std::make_unique<Fp8ScalingState>(*kernels, binding.fp8, cfg.model.layers, blocks);
  }
  if (cfg.precision.fp16()) scaler = std::make_unique<LossScaler>(cfg.precision);
  optimizer = std::make_unique<OptimizerState>(*kernels, groups, buffers, cfg.parallel.distributed_optimizer);
  if (id.rank == 0) {
    int64_t gradients = 0;
    for (const ChunkBuffers& b : buffers) gradients += b.layout().size * static_cast<int64_t>(sizeof(float));
    auto size = [](int64_t bytes) { return fmt::format("{} ({} bytes)", byte_size(bytes), bytes); };
    spdlog::info("rank 0 holds fp32 master weights {}, gradients {}, Adam moments {}{}", size(optimizer->master_bytes()),
                 size(gradients), size(optimizer->moment_bytes()),
                 optimizer->distributed()
                     ? fmt::format(" (master weights and moments: its 1/{} shard, distributed optimizer)", topology.data())
                     : "");
  }
}

void RankSetup::initialize_parameters() {
  optimizer->load_each_whole([&](const std::vector<ParamRef>& params) {
    for (const ParamRef& p : params) {
      const std::vector<float> values = initial_values(p, cfg.run.seed, cfg.model.layers, cfg.model.vocab);
      kernels->copy_from_host(p.master, values.data());
    }
  });
}

void RankSetup::open_data() {
  data.emplace(RunData::open(cfg));
  tokenizer = run_tokenizer(cfg, *data);
  data_record = data->record();
}

int64_t RankSetup::open_checkpoints() {
  const bool elsewhere = resumes_from_elsewhere(cfg);
  if (cfg.checkpoint.dir.empty() && !elsewhere) return 0;
  const CheckpointRole role{id.rank, id.world_size, me.dp, me.tp, me.pp, topology.pipeline()};
  auto open_manager = [&](const std::string& dir, bool writing) {
    auto checkpoint_store = plugins_->create<CheckpointStore>(place());
    if (writing) checkpoint_store->open(dir);
    else checkpoint_store->open_existing(dir);
    return std::make_unique<CheckpointManager>(checkpoint_store, *kernels, role);
  };
  std::vector<int64_t> committed, source_steps;
  if (!cfg.checkpoint.dir.empty()) {
    checkpoints = open_manager(cfg.checkpoint.dir, true);
    committed = checkpoints->committed_steps();
  }
  std::unique_ptr<CheckpointManager> source;
  if (elsewhere) {
    source = open_manager(cfg.checkpoint.resume_from, false);
    source_steps = source->committed_steps();
  }
  const auto resume = resume_point(cfg, committed, source_steps);
  if (!resume) return 0;
  CheckpointManager& from = source ? *source : *checkpoints;
  const std::string where = fmt::format("{} step {}", resume->dir, resume->step);
  const nlohmann::json saved = nlohmann::json::parse(from.metadata(resume->step), nullptr, false);
  // Checked before any rank starts (prepare_checkpoint_folder) for ptdp-host's own ranks; again
  // here for ranks an external launcher started.
  check_resumed_model(cfg, saved, where);
  try {
    check_resumed_tokenizer(saved, tokenizer, where);
    // Batches are drawn over the files in order: other files mean other batches from here on.
    // (eval scores other data on purpose.)
    if (id.rank == 0 && options.eval_batches == 0 && saved.contains("data") && !data_record.is_null())
      if (const std::string change = data_change(saved["data"], data_record); !change.empty())
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
  naming_the_folder([&] { from.check(resume->step, optimizer->whole_params()); });
  naming_the_folder([&] {
    optimizer->load_each_whole([&](const std::vector<ParamRef>& params) { from.read(resume->step, params); });
  });
  if (fp8 && fp8->delayed()) {
    std::vector<std::string> names;
    for (const HostStateTensor& t : fp8->history()) names.push_back(t.name);
    const std::vector<HostStateTensor> saved_history = from.read_state(resume->step, names);
    if (saved_history.size() < names.size() && me.dp == 0 && me.tp == 0)
      spdlog::warn("resume: {} step {} holds the FP8 amax history of {} of this stage's {} FP8 blocks; the others start "
                   "with none (scale 1), as in a run's first step",
                   resume->dir, resume->step, saved_history.size(), names.size());
    fp8->load_history(saved_history);
  }
  if (scaler) {
    if (saved.contains("loss_scale"))
      scaler->restore(loss_scale_from_json(saved["loss_scale"], where));
    else if (id.rank == 0)
      spdlog::warn("resume: {} holds no loss scale (it was saved without fp16); the scale starts from "
                   "precision.loss_scale_initial = {}",
                   where, cfg.precision.loss_scale_initial);
  }
  if (id.rank == 0) spdlog::info("resumed from {} at step {}", resume->dir, resume->step);
  const nlohmann::json saved_schedule = saved.value("schedule", nlohmann::json());
  ResumedSchedule resumed = resume_schedule(cfg, saved_schedule, resume->step);
  lr_schedule = resumed.schedule;
  if (id.rank == 0)
    for (const std::string& change : resumed.changes) spdlog::warn("resume: {}", change);
  return resume->step;
}

void RankSetup::open_reduction_lane() {
  if (topology.data() == 1) return;
  CommInit init = world_init();
  init.key_prefix = "reduction-lane";
  lane = std::make_unique<CommLane>(
      plugins_->create<Communicator>(place()), init,
      [this](Communicator& world) { return split_data_group(world, topology); }, kernels->side_stream());
}

void RankSetup::open_transfer_lane() {
  if (topology.pipeline() == 1) return;
  // On a GPU the lane's transfers go on the kernels' transfer stream: on the compute stream,
  // posting them early would hold back the compute queued after them. A kernels plugin of an
  // older ABI has none, and there the executor keeps its blocking groups on the compute stream.
  void* stream = nullptr;
  if (device.kind != MemoryKind::Host) {
    if (!kernels_transfer_stream || (stream = kernels->transfer_stream()) == nullptr) return;
  }
  CommInit init = world_init();
  init.key_prefix = "transfer-lane";
  transfer_lane = std::make_unique<CommLane>(
      plugins_->create<Communicator>(place()), init,
      [this](Communicator& world) { return split_pipeline_group(world, topology); }, stream);
}

}  // namespace ptdp
