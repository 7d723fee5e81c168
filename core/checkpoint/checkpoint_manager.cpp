#include "checkpoint/checkpoint_manager.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>

#include <ptdp/error.hpp>

namespace ptdp {

namespace {

// The tensors saved for one parameter, under their checkpoint names.
std::array<std::pair<std::string, const Tensor*>, 3> saved_tensors(const ParamRef& p) {
  return {{{p.name, &p.master}, {p.name + ".exp_avg", &p.exp_avg}, {p.name + ".exp_avg_sq", &p.exp_avg_sq}}};
}

// Where this rank's part of `p` lies in the global tensor; refuses a description that does not fit.
ShardInfo local_part(const ParamRef& p) {
  const std::string who = "checkpoint: parameter '" + p.name + "'";
  const int rank = static_cast<int>(p.global_shape.size());
  if (p.shard_dim < -1 || p.shard_dim >= rank)
    throw Error(who + ": shard_dim " + std::to_string(p.shard_dim) + " is outside its " +
                std::to_string(rank) + " dimensions");
  ShardInfo info{p.name, DType::F32, p.global_shape, std::vector<int64_t>(rank, 0), p.master.shape};
  bool fits = static_cast<int>(p.master.shape.size()) == rank;
  for (int d = 0; fits && d < rank; ++d) {
    if (d == p.shard_dim) {
      info.offset[d] = p.shard_offset;
      fits = p.shard_offset >= 0 && p.shard_offset + p.master.shape[d] <= p.global_shape[d];
    } else {
      fits = p.master.shape[d] == p.global_shape[d];
    }
  }
  if (!fits)
    throw Error(who + ": local shape " + shape_string(p.master.shape) + " at offset " +
                std::to_string(p.shard_offset) + " of dimension " + std::to_string(p.shard_dim) +
                " does not fit global shape " + shape_string(p.global_shape));
  return info;
}

void check_local_tensor(const ParamRef& p, const std::string& name, const Tensor& t) {
  if (t.dtype != DType::F32 || t.shape != p.master.shape)
    throw Error("checkpoint: '" + name + "' is " + dtype_name(t.dtype) + " " + shape_string(t.shape) +
                ", expected f32 " + shape_string(p.master.shape));
}

// A diverged model saved as the newest step would make every resume fail the same way; the
// rank stops before finish_rank, so the step is never committed and the last good one stays newest.
void refuse_non_finite(int64_t step, const std::string& name, const std::vector<char>& f32_bytes) {
  const size_t count = f32_bytes.size() / sizeof(float);
  for (size_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, f32_bytes.data() + i * sizeof(float), sizeof value);
    if (!std::isfinite(value))
      throw Error("checkpoint: step " + std::to_string(step) + " not saved: '" + name + "' holds " +
                  std::to_string(value) + " at element " + std::to_string(i) +
                  ": the run diverged, and the newest committed step is still the last good one");
  }
}

}  // namespace

CheckpointManager::CheckpointManager(std::shared_ptr<CheckpointStore> store, LayerKernels& kernels,
                                     CheckpointRole role)
    : store_(std::move(store)), kernels_(kernels), role_(role) {
  if (!store_) throw Error("checkpoint: no checkpoint store");
  if (role_.world_size < 1 || role_.rank < 0 || role_.rank >= role_.world_size ||
      role_.pipeline_stages < 1 || role_.pp_stage < 0 || role_.pp_stage >= role_.pipeline_stages ||
      role_.dp_rank < 0 || role_.tp_rank < 0)
    throw Error("checkpoint: inconsistent role: rank " + std::to_string(role_.rank) + " of " +
                std::to_string(role_.world_size) + ", stage " + std::to_string(role_.pp_stage) + " of " +
                std::to_string(role_.pipeline_stages) + ", dp " + std::to_string(role_.dp_rank) + ", tp " +
                std::to_string(role_.tp_rank));
}

void CheckpointManager::save(int64_t step, const std::vector<ParamRef>& params, const std::string& metadata_json,
                             const std::function<void()>& barrier) {
  write(step, params);
  commit(step, metadata_json, barrier);
}

void CheckpointManager::write(int64_t step, const std::vector<ParamRef>& params) {
  // Every parameter is checked before the first write, so bad input leaves nothing half written.
  std::vector<std::pair<ShardInfo, const Tensor*>> to_write;
  for (const ParamRef& p : params) {
    if (!writes(role_, p)) continue;
    ShardInfo info = local_part(p);
    for (const auto& [name, tensor] : saved_tensors(p)) {
      check_local_tensor(p, name, *tensor);
      info.name = name;
      to_write.emplace_back(info, tensor);
    }
  }
  std::vector<char> host;
  for (const auto& [info, tensor] : to_write) {
    host.resize(tensor->bytes());
    kernels_.copy_to_host(host.data(), *tensor);
    kernels_.synchronize();
    refuse_non_finite(step, info.name, host);
    store_->write_shard(step, role_.rank, info, host.data());
  }
}

void CheckpointManager::commit(int64_t step, const std::string& metadata_json, const std::function<void()>& barrier) {
  store_->finish_rank(step, role_.rank);
  barrier();
  if (role_.rank == 0) store_->commit(step, role_.world_size, metadata_json);
}

std::optional<int64_t> CheckpointManager::latest_step() {
  std::vector<int64_t> steps = store_->list_steps();
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

std::vector<int64_t> CheckpointManager::keep_newest(int keep) {
  std::vector<int64_t> removed;
  if (keep <= 0) return removed;
  const std::vector<int64_t> steps = store_->list_steps();
  for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i) {
    store_->remove_step(steps[i]);
    removed.push_back(steps[i]);
  }
  return removed;
}

void CheckpointManager::load(int64_t step, const std::vector<ParamRef>& params) {
  check(step, params);
  read(step, params);
  kernels_.params_updated();
}

namespace {

// Each parameter's tensors under their checkpoint names, with the region of the global tensor
// this rank holds.
std::vector<std::pair<ShardInfo, const Tensor*>> wanted(const std::vector<ParamRef>& params) {
  std::vector<std::pair<ShardInfo, const Tensor*>> to_read;
  for (const ParamRef& p : params) {
    ShardInfo want = local_part(p);
    for (const auto& [name, tensor] : saved_tensors(p)) {
      check_local_tensor(p, name, *tensor);
      want.name = name;
      to_read.emplace_back(want, tensor);
    }
  }
  return to_read;
}

}  // namespace

void CheckpointManager::check(int64_t step, const std::vector<ParamRef>& params) {
  const std::string in_step = " in checkpoint step " + std::to_string(step);
  std::map<std::string, ShardInfo> saved;
  for (ShardInfo& s : store_->shards(step)) saved.try_emplace(s.name, std::move(s));
  // Names and shapes only: the caller may not hold the moments yet.
  std::vector<ShardInfo> to_check;
  for (const ParamRef& p : params) {
    ShardInfo want = local_part(p);
    for (const auto& [name, tensor] : saved_tensors(p)) {
      want.name = name;
      to_check.push_back(want);
    }
  }
  for (const ShardInfo& want : to_check) {
    auto found = saved.find(want.name);
    if (found == saved.end()) throw Error("checkpoint: no tensor '" + want.name + "'" + in_step);
    const ShardInfo& s = found->second;
    if (s.dtype != DType::F32 || s.global_shape != want.global_shape)
      throw Error("checkpoint: tensor '" + want.name + "' is " + dtype_name(s.dtype) + " " +
                  shape_string(s.global_shape) + in_step + ", the model's is f32 " +
                  shape_string(want.global_shape));
  }
}

void CheckpointManager::read(int64_t step, const std::vector<ParamRef>& params) {
  const std::string in_step = " in checkpoint step " + std::to_string(step);
  std::vector<char> host;
  for (const auto& [want, tensor] : wanted(params)) {
    host.resize(tensor->bytes());
    try {
      store_->read(step, want, host.data());
    } catch (const Error& e) {
      throw Error("checkpoint: tensor '" + want.name + "'" + in_step + ": " + e.what());
    }
    kernels_.copy_from_host(*tensor, host.data());
    kernels_.synchronize();
  }
}

std::string CheckpointManager::metadata(int64_t step) { return store_->metadata(step); }

void CheckpointManager::write_state(int64_t step, const std::vector<HostStateTensor>& tensors) {
  if (role_.dp_rank != 0 || role_.tp_rank != 0) return;
  for (const HostStateTensor& t : tensors) {
    const ShardInfo info{t.name, DType::F32, t.shape, std::vector<int64_t>(t.shape.size(), 0), t.shape};
    std::vector<char> bytes(t.values.size() * sizeof(float));
    std::memcpy(bytes.data(), t.values.data(), bytes.size());
    refuse_non_finite(step, t.name, bytes);
    store_->write_shard(step, role_.rank, info, bytes.data());
  }
}

std::vector<HostStateTensor> CheckpointManager::read_state(int64_t step, const std::vector<std::string>& names) {
  std::map<std::string, ShardInfo> saved;
  for (ShardInfo& s : store_->shards(step)) saved.try_emplace(s.name, std::move(s));
  std::vector<HostStateTensor> out;
  for (const std::string& name : names) {
    const auto found = saved.find(name);
    if (found == saved.end()) continue;
    const ShardInfo& s = found->second;
    if (s.dtype != DType::F32)
      throw Error("checkpoint: tensor '" + name + "' is " + dtype_name(s.dtype) + " in checkpoint step " +
                  std::to_string(step) + ", expected f32");
    HostStateTensor t{name, s.global_shape, {}};
    int64_t count = 1;
    for (int64_t d : s.global_shape) count *= d;
    t.values.resize(static_cast<size_t>(count));
    const ShardInfo want{name, DType::F32, s.global_shape, std::vector<int64_t>(s.global_shape.size(), 0),
                         s.global_shape};
    try {
      store_->read(step, want, t.values.data());
    } catch (const Error& e) {
      throw Error("checkpoint: tensor '" + name + "' in checkpoint step " + std::to_string(step) + ": " + e.what());
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace ptdp
