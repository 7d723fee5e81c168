#include "runtime/trainer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>
#include <ptdp/message_text.hpp>

#include "manifest/model_math.hpp"
#include "manifest/run_config_json.hpp"
#include "metrics/learning_rate.hpp"
#include "metrics/metrics_log.hpp"
#include "metrics/progress_line.hpp"
#include "metrics/run_header.hpp"
#include "metrics/schedule_state.hpp"
#include "profile/device_tracks.hpp"
#include "profile/profile_report.hpp"
#include "runtime/gradient_sync.hpp"
#include "runtime/gradient_zeroing.hpp"
#include "runtime/pipeline_executor.hpp"
#include "runtime/rank_setup.hpp"
#include "runtime/stop_signal.hpp"
#include "schedule/chrome_trace.hpp"
#include "schedule/forward_only_schedule.hpp"
#include "schedule/instruction_stream.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {
namespace {

// What a divergence error adds about the step that was due to be saved but never proved sound.
std::string unsaved_note(const std::optional<int64_t>& unverified_save) {
  if (!unverified_save) return "";
  return ", and step " + std::to_string(*unverified_save) + ", whose weights gave these gradients, is not saved";
}

class RankTrainer {
 public:
  RankTrainer(const RunConfig& config, const RankEnvironment& id, const TrainOptions& options)
      : cfg_(config), id_(id), options_(options), rank_(config, id, options) {}
  // The tensor group the kernels hold records into the timeline, which goes first.
  ~RankTrainer() {
    if (rank_.kernels_tensor_group) rank_.kernels_tensor_group->trace_to(nullptr);
  }
  RankTrainer(const RankTrainer&) = delete;
  RankTrainer& operator=(const RankTrainer&) = delete;

  TrainOutcome run();
  void abort(const std::string& reason) { rank_.abort(reason); }

 private:
  // Once per run, after the rank is set up: the verified schedule, the batches, the executor and
  // what reduces the gradients.
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
  const RankEnvironment& id_;
  const TrainOptions& options_;
  RankSetup rank_;  // everything made once, before the first step
  // Delayed FP8: the history a step due to be saved ended with, and that step.
  std::pair<int64_t, std::vector<HostStateTensor>> history_to_save_{-1, {}};
  // fp16: the loss scale a step due to be saved ended with, and that step.
  std::pair<int64_t, LossScaleState> scale_to_save_{-1, {}};

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
  std::optional<GradientReducer> reducer_;
  std::optional<int64_t> unverified_save_;  // a step due to be saved, once the next one shows it sound
};

void RankTrainer::save_checkpoint(int64_t completed_steps) {
  nlohmann::json metadata = {
      {"step", completed_steps},
      {"manifest", cfg_.source},
      {"layout", {{"pipeline", rank_.topology.pipeline()}, {"tensor", rank_.topology.tensor()}, {"data", rank_.topology.data()},
                  {"virtual_stages", cfg_.parallel.virtual_stages}}},
      {"model", {{"layers", cfg_.model.layers}, {"hidden", cfg_.model.hidden}, {"heads", cfg_.model.heads},
                 {"seq_len", cfg_.model.seq_len}, {"vocab", cfg_.model.vocab}}},
      {"config", run_config_json(cfg_)},
      {"schedule", schedule_record(rank_.lr_schedule)}};
  if (rank_.tokenizer) metadata["tokenizer"] = rank_.tokenizer->json();
  if (!rank_.data_record.is_null()) metadata["data"] = rank_.data_record;
  if (rank_.scaler)
    metadata["loss_scale"] =
        loss_scale_json(scale_to_save_.first == completed_steps ? scale_to_save_.second : rank_.scaler->state());
  rank_.optimizer->for_each_whole([&](const std::vector<ParamRef>& params) { rank_.checkpoints->write(completed_steps, params); });
  if (rank_.fp8)
    rank_.checkpoints->write_state(completed_steps, history_to_save_.first == completed_steps ? history_to_save_.second
                                                                                        : rank_.fp8->history());
  rank_.checkpoints->commit(completed_steps, metadata.dump(), [this] { rank_.world->barrier(); });
  if (id_.rank != 0) return;
  spdlog::info("checkpoint of step {} committed to {}", completed_steps, cfg_.checkpoint.dir);
  const std::vector<int64_t> removed = rank_.checkpoints->keep_newest(cfg_.checkpoint.keep);
  if (!removed.empty())
    spdlog::info("checkpoint.keep = {}: deleted step{} {}", cfg_.checkpoint.keep, removed.size() > 1 ? "s" : "",
                 step_list(removed));
}

double RankTrainer::step_loss(const Tensor& losses, int microbatches) {
  // The last stage holds the losses; average over microbatches and data-parallel replicas, then
  // hand the value to every stage of the pipeline.
  double loss = 0;
  if (rank_.me.pp == rank_.topology.pipeline() - 1) {
    std::vector<float> host(static_cast<size_t>(microbatches));
    rank_.kernels->copy_to_host(host.data(), losses);
    for (float l : host) loss += l;
    loss /= microbatches;
    loss = all_reduce_scalar(*rank_.kernels, *rank_.groups.data, loss, ReduceOp::Sum) / rank_.topology.data();
  }
  if (rank_.topology.pipeline() > 1) {
    float v = static_cast<float>(loss);
    OwnedTensor buffer = rank_.kernels->allocate({1}, DType::F32);
    rank_.kernels->copy_from_host(buffer.view, &v);
    rank_.groups.pipeline->broadcast(buffer.view, rank_.topology.pipeline() - 1);
    rank_.kernels->copy_to_host(&v, buffer.view);
    loss = v;
  }
  return loss;
}

void RankTrainer::write_trace(const TimelineRecorder& timeline, const std::vector<DeviceActivity>& device_work) {
  nlohmann::json spans = nlohmann::json::array();
  for (const auto& s : timeline.spans())
    spans.push_back({{"name", s.name}, {"cat", s.category}, {"ts", s.start_us}, {"dur", s.duration_us},
                     {"track", static_cast<int>(s.track)}});
  // The device's records keep their own clock; each rank's are shifted by its own origin.
  const nlohmann::json mine = {{"spans", spans}, {"origin_us", timeline.origin_us()},
                               {"device", nlohmann::json::parse(device_activities_to_json(device_work))}};
  const std::string text = mine.dump();
  rank_.store->set(fmt::format("trace/{}", id_.rank), std::vector<uint8_t>(text.begin(), text.end()));
  if (id_.rank != 0) return;
  ChromeTrace trace;
  for (int r = 0; r < id_.world_size; ++r) {
    const auto bytes = rank_.store->get(fmt::format("trace/{}", r), std::chrono::milliseconds(
                                                                   static_cast<int64_t>(cfg_.launch.timeout_s * 1000)));
    const auto pos = rank_.topology.position_of(r);
    trace.set_process_name(r, fmt::format("rank {} (pp {}, dp {}, tp {})", r, pos.pp, pos.dp, pos.tp));
    const auto rank = nlohmann::json::parse(bytes.begin(), bytes.end());
    // Thread 0: the ops; 1: the data-parallel reduction lane; 2: the pipeline transfer lane; 3 on:
    // the device's streams.
    std::vector<bool> used(3, false);
    for (const auto& s : rank.at("spans")) {
      const int track = s["track"].get<int>();
      used.at(track) = true;
      trace.add_span(s["name"].get<std::string>(), s["cat"].get<std::string>(), r, track, s["ts"].get<double>(),
                     s["dur"].get<double>());
    }
    const auto device = device_activities_from_json(rank.at("device").dump());
    if (used[1] || used[2] || !device.empty()) trace.set_thread_name(r, 0, "ops");
    if (used[1]) trace.set_thread_name(r, 1, "data-parallel reduction");
    if (used[2]) trace.set_thread_name(r, 2, "pipeline transfers");
    if (!device.empty()) add_device_tracks(trace, r, device, rank.at("origin_us").get<double>(), 3);
  }
  trace.write(options_.trace_path);
  spdlog::info("trace of {} ranks written to {}", id_.world_size, options_.trace_path);
}

void RankTrainer::report_profile(const std::vector<DeviceActivity>& device_work,
                                 const std::vector<ProfileWindow>& windows) {
  const ProfileReport report = build_profile_report(device_work, rank_.profiler->take_samples(), windows,
                                                    model_work(cfg_, id_.world_size), rank_.profiler->peaks());
  const auto pos = rank_.topology.position_of(id_.rank);
  const std::string text =
      format_profile_report(report, fmt::format("rank {} (pp {}, dp {}, tp {})", id_.rank, pos.pp, pos.dp, pos.tp));
  rank_.store->set(fmt::format("profile/{}", id_.rank), std::vector<uint8_t>(text.begin(), text.end()));
  if (id_.rank != 0) return;
  for (int r = 0; r < id_.world_size; ++r) {
    const auto bytes = rank_.store->get(fmt::format("profile/{}", r), std::chrono::milliseconds(
                                                                     static_cast<int64_t>(cfg_.launch.timeout_s * 1000)));
    spdlog::info("{}", std::string(bytes.begin(), bytes.end()));
  }
}

TrainOutcome RankTrainer::run() {
  const int64_t first_step = rank_.set_up();
  if (options_.use_loaded_model) {
    PTDP_CHECK(id_.world_size == 1 && rank_.chunks.size() == 1, "a loaded model is handed over on one rank only");
    options_.use_loaded_model(*rank_.kernels, *rank_.chunks.front(), rank_.model);
    return TrainOutcome::Finished;
  }
  prepare_steps(first_step);
  // With eval_batches the run only evaluates the model it loaded.
  if (options_.eval_batches > 0) evaluate();
  else if (train(first_step) == TrainOutcome::StoppedBySignal) return TrainOutcome::StoppedBySignal;
  rank_.world->barrier();
  return TrainOutcome::Finished;
}

void RankTrainer::prepare_steps(int64_t first_step) {
  const int p = cfg_.parallel.pipeline, v = cfg_.parallel.virtual_stages, m = cfg_.parallel.microbatches();
  const ScheduleShape shape{p, v, m};
  const PipelineSchedule schedule = plan_schedule(*rank_.scheduler, shape);
  if (id_.rank == 0)
    spdlog::info("schedule {} verified: p={} v={} m={}, bubble (p-1)/(v*m) = {:.4f}, peak activations on stage 0: {}",
                 cfg_.plugins.scheduler, p, v, m, formula_bubble_fraction(shape), schedule.report.peak_activations.at(0));
  training_stream_ = schedule.streams.at(rank_.me.pp);
  forward_only_stream_ = verified_forward_only_streams(shape).at(rank_.me.pp);

  training_batches_.emplace(rank_.data->training(cfg_.model.seq_len, cfg_.run.seed, cfg_.data.val_fraction));
  if (cfg_.data.val_every > 0)
    validation_batches_.emplace(rank_.data->validation_batches(cfg_.model.seq_len, cfg_.run.seed, cfg_.data.val_fraction));

  executor_.emplace(*rank_.kernels, rank_.groups, rank_.topology, m, cfg_.parallel.scatter_gather, rank_.chunks, rank_.model,
                    cfg_.parallel.global_batch / rank_.topology.data(), rank_.kernels_write_first_gradients,
                    rank_.kernels_split_backward);
  timeline_.emplace(*rank_.kernels, /*wait_for_device=*/!rank_.profiler);
  rank_.kernels_tensor_group->trace_to(&*timeline_);
  losses_ = rank_.kernels->allocate({m}, DType::F32);
  loss_scale_ = 1.0f / static_cast<float>(m * rank_.topology.data());
  if (id_.rank == 0 && !options_.metrics_path.empty()) {
    metrics_ = std::make_unique<MetricsLog>(options_.metrics_path, /*append=*/first_step > 0);
    metrics_->write_header(make_run_header(cfg_, rank_.registry, rank_.device, schedule.report.peak_activations));
  }
  if (options_.eval_batches > 0) return;  // evaluation computes no gradients
  rank_.open_reduction_lane();
  rank_.open_transfer_lane();
  executor_->post_transfers_on(rank_.transfer_lane.get());
  std::vector<std::vector<Tensor>> zeroed;
  for (size_t c = 0; c < rank_.chunks.size(); ++c)
    zeroed.push_back(gradients_to_zero(rank_.buffers[c], rank_.chunks[c]->layout(), rank_.kernels_write_first_gradients));
  reducer_.emplace(*rank_.kernels, rank_.groups, rank_.buffers, std::move(zeroed), rank_.optimizer->distributed(), rank_.lane.get(),
                   *timeline_, cfg_.parallel.sequence_parallel);
  executor_->on_gradients_final([this](int chunk, int layer) { reducer_->layer_final(chunk, layer); });
  if (rank_.lane && rank_.optimizer->distributed() && cfg_.parallel.overlap_param_gather) {
    rank_.optimizer->gather_on_lane(*rank_.lane, *timeline_);
    executor_->on_layer_starting([this](int chunk, int layer) { rank_.optimizer->weights_needed(chunk, layer); });
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
    const bool profiled = rank_.profiler && traced;
    if (rank_.profiler && step == profile_from) rank_.profiler->start();
    if (profiled) profiled_steps.push_back({steady_us(step_start), 0});
    // Under fp16 the head's backward also multiplies by the loss scale S: S/(m·d).
    const float loss_scale = loss_scale_ * (rank_.scaler ? rank_.scaler->scale() : 1.0f);
    StepMetrics sm = train_step({step, training_stream_, *training_batches_, losses_.view, loss_scale, true, *timeline_});
    if (profiled) profiled_steps.back().end_us = steady_us(std::chrono::steady_clock::now());
    if (profiled && step == trace_end - 1) rank_.profiler->stop();  // train_step waited for the device
    if (!std::isfinite(sm.loss))
      throw Error(fmt::format("step {}: loss is {}; stopping, and this step is not saved", step + 1, sm.loss));
    const auto now = std::chrono::steady_clock::now();
    sm.step_time_s = std::chrono::duration<double>(now - step_start).count();
    sm.elapsed_s = std::chrono::duration<double>(now - start).count();
    sm.tokens_per_s = static_cast<double>(tokens_per_step) / sm.step_time_s;
    sm.tflops_per_gpu = flops / sm.step_time_s / id_.world_size / 1e12;
    sm.val_loss = validation_loss(step + 1);
    record_step(sm);
    if (step == trace_end - 1 && (tracing || rank_.profiler)) {
      const std::vector<DeviceActivity> device_work =
          rank_.profiler ? activities_in(rank_.profiler->take_activities(), profiled_steps) : std::vector<DeviceActivity>{};
      if (rank_.profiler) report_profile(device_work, profiled_steps);
      if (tracing) write_trace(*timeline_, device_work);
    }
    checkpoint_when_due(step + 1);
    const int stop = step + 1 < cfg_.run.steps ? stop_requested() : 0;
    if (stop != 0) {
      if (rank_.checkpoints) save_after_a_forward(step + 1);
      rank_.optimizer->take_all_weights();
      if (id_.rank == 0)
        spdlog::warn("stopped by {} after step {}/{}: {}", signal_name(stop), step + 1, cfg_.run.steps,
                     rank_.checkpoints ? "a resume continues from its checkpoint"
                                  : "no checkpoint.dir, so nothing was saved");
      rank_.world->barrier();
      return TrainOutcome::StoppedBySignal;
    }
  }
  rank_.optimizer->take_all_weights();  // the trained weights, in the backend, before the run ends
  return TrainOutcome::Finished;
}

StepMetrics RankTrainer::train_step(const StepContext& step) {
  reducer_->begin_step(!rank_.optimizer->weights_pending());
  if (rank_.fp8) rank_.fp8->begin_step();
  executor_->run(step);
  reducer_->finish();
  if (rank_.fp8 && rank_.fp8->delayed()) {
    // The step due to be saved is saved below, once these gradients prove it sound: with the
    // history it ended with, not the one this step is about to extend.
    if (unverified_save_) history_to_save_ = {*unverified_save_, rank_.fp8->history()};
    finish_fp8_step(step.step);
  }
  AdamStep adam;
  step.timeline.span("grad norm", "collective",
                     [&] { adam.grad_sum_squares = rank_.optimizer->grad_sum_squares(rank_.me, rank_.topology.pipeline()); });
  adam.step = step.step + 1;
  adam.lr = static_cast<float>(learning_rate(rank_.lr_schedule, step.step, rank_.lr_schedule.decay_steps));
  adam.beta1 = static_cast<float>(cfg_.optimizer.beta1);
  adam.beta2 = static_cast<float>(cfg_.optimizer.beta2);
  adam.eps = static_cast<float>(cfg_.optimizer.eps);
  adam.weight_decay = cfg_.optimizer.type == "adamw" ? static_cast<float>(cfg_.optimizer.weight_decay) : 0.0f;
  // The kernels read the norm and clip on the device, and update nothing when it is not finite,
  // so the host reads it only after the update is queued.
  adam.max_grad_norm = static_cast<float>(std::max(0.0, cfg_.optimizer.grad_clip));
  // Under fp16 the gradients carry the loss scale, which Adam divides out; the norm the host
  // reads is the sum's root over it, the true gradients' norm.
  adam.loss_scale = rank_.scaler ? rank_.scaler->scale() : 1.0f;
  auto read_grad_norm = [&] { return rank_.optimizer->read_grad_norm() / adam.loss_scale; };
  auto refuse_non_finite = [&](double grad_norm) {
    if (std::isfinite(grad_norm)) return;
    const std::string amax = rank_.fp8 ? rank_.fp8->first_non_finite_amax() : "";
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
    if (!rank_.scaler || std::isfinite(norm)) {
      refuse_non_finite(norm);
      save_checkpoint(*unverified_save_);
      unverified_save_.reset();
    }
  }
  step.timeline.span("optimizer step", "optimizer", [&] { rank_.optimizer->step(adam); });
  StepMetrics sm;
  sm.step = step.step + 1;
  sm.loss = step_loss(step.losses, cfg_.parallel.microbatches());
  const double grad_norm = read_grad_norm();
  // A norm that is not finite left everything as it was: under fp16 the step is skipped, else
  // the run stops.
  if (rank_.scaler) update_loss_scale(!std::isfinite(grad_norm), sm);
  else refuse_non_finite(grad_norm);
  sm.grad_norm = grad_norm;
  sm.lr = adam.lr;
  rank_.kernels->synchronize();
  return sm;
}

void RankTrainer::finish_fp8_step(int64_t step) {
  // Every rank learns whether any stage met a non-finite amax, so that all stop at this step,
  // before the optimizer step, with the weights and the amax history as they were.
  const std::string non_finite = rank_.fp8->finish_step(rank_.groups);
  const double anywhere = all_reduce_scalar(*rank_.kernels, *rank_.world, non_finite.empty() ? 0.0 : 1.0, ReduceOp::Max);
  if (anywhere == 0) return;
  throw Error(fmt::format("step {}: {}; stopping before the weights are corrupted{}", step + 1,
                          non_finite.empty() ? "an FP8 amax on another rank is not finite"
                                             : "the FP8 amax of " + non_finite + " is not finite",
                          unsaved_note(unverified_save_)));
}

void RankTrainer::update_loss_scale(bool overflow, StepMetrics& sm) {
  const LossScaleUpdate update = rank_.scaler->update(overflow);
  if (update.below_minimum)
    throw Error(below_minimum_error(sm.step, update, cfg_.precision.loss_scale_min) + unsaved_note(unverified_save_));
  if (update.skipped && id_.rank == 0)
    spdlog::info("{}", overflow_line(sm.step, update, cfg_.precision.loss_scale_hysteresis));
  sm.loss_scale = update.scale_before;
  sm.skipped = update.skipped;
  sm.steps_skipped = rank_.scaler->state().skipped_steps;
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
  const BatchSampler whole = rank_.data->everything(cfg_.model.seq_len, cfg_.run.seed);
  const double loss = forward_loss(whole, options_.eval_batches);
  if (!std::isfinite(loss))
    throw Error(fmt::format("eval {}: the loss is {}: the model's weights give no finite loss (a diverged step?)",
                            rank_.data->train.front().corpus.name(), loss));
  if (id_.rank == 0)
    spdlog::info("eval {} | loss {:.6f} | perplexity {:.4f} | {} batches of {} tokens", rank_.data->train.front().corpus.name(),
                 loss, std::exp(loss), options_.eval_batches,
                 static_cast<int64_t>(cfg_.parallel.global_batch) * cfg_.model.seq_len);
}

void RankTrainer::checkpoint_when_due(int64_t completed_steps) {
  const bool last = completed_steps == cfg_.run.steps;
  if (!rank_.checkpoints || cfg_.checkpoint.every <= 0 || (completed_steps % cfg_.checkpoint.every != 0 && !last)) return;
  // A step is saved once the next one has shown its weights give finite gradients, so a
  // diverged model never becomes the newest checkpoint; the last step has no next one.
  if (last) {
    save_after_a_forward(completed_steps);
    return;
  }
  unverified_save_ = completed_steps;
  if (rank_.scaler) scale_to_save_ = {completed_steps, rank_.scaler->state()};
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
  return static_cast<int>(all_reduce_scalar(*rank_.kernels, *rank_.world, here, ReduceOp::Max));
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
