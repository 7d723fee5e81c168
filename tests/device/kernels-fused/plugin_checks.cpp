// kernels-fused through the plugin boundary, beyond what the LayerKernels conformance suite
// (tests/kernels_conformance, run for each setting of the plugin's options) compares with
// kernels-ref: the optimizer step and gradient norm against kernels-ref, and the errors bad
// input gets.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "device_check_registry.hpp"
#include "device_checks.hpp"
#include "plugin_loader.hpp"
#include "ptdp/counter_rng.hpp"
#include "support/small_gpt_spec.hpp"
#include "test_communicators.hpp"

namespace ptdp::fused::test {
namespace {

// The model's loss in bf16 against fp32: emulating this backend's bf16 storage points in fp64
// PyTorch on these shapes (12 draws) gave at most 3e-4.
constexpr double kModelLossTolerance = 2e-3;
constexpr double kOptimizerTolerance = 1e-6;  // fp32 on both sides from identical inputs

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Initial value of every element of a global tensor, by name: what the core does, in small.
std::vector<float> global_values(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed) {
  const bool layer_norm = name.find(".ln") != std::string::npos || name.rfind("head.ln", 0) == 0;
  const bool bias = ends_with(name, ".bias");
  const float base = layer_norm && !bias ? 1.0f : 0.0f;
  const float scale = layer_norm ? 0.1f : bias ? 0.05f : name.rfind("embedding.", 0) == 0 ? 0.1f : 0.08f;
  const uint64_t key = rng::name_key(seed, name);
  std::vector<float> v(size_t(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + scale * rng::normal(key, 0, i);
  return v;
}

// Row-major global tensor <-> this rank's part (offset along shard_dim).
struct ShardGeometry {
  int64_t outer = 1, global_mid = 1, local_mid = 1, inner = 1, offset = 0;
};
ShardGeometry geometry(const ParamRef& p) {
  ShardGeometry g;
  if (p.shard_dim < 0) {
    g.inner = numel(p.global_shape);
    return g;
  }
  const size_t d = size_t(p.shard_dim);
  for (size_t i = 0; i < d; ++i) g.outer *= p.global_shape[i];
  for (size_t i = d + 1; i < p.global_shape.size(); ++i) g.inner *= p.global_shape[i];
  g.global_mid = p.global_shape[d];
  g.local_mid = p.master.shape[d];
  g.offset = p.shard_offset;
  return g;
}
template <class T>
std::vector<T> slice(const std::vector<T>& global, const ParamRef& p) {
  const ShardGeometry g = geometry(p);
  std::vector<T> local(size_t(g.outer * g.local_mid * g.inner));
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t m = 0; m < g.local_mid; ++m)
      std::memcpy(&local[size_t((o * g.local_mid + m) * g.inner)],
                  &global[size_t((o * g.global_mid + g.offset + m) * g.inner)], size_t(g.inner) * sizeof(T));
  return local;
}
void place(std::vector<double>& global, const std::vector<double>& local, const ParamRef& p) {
  const ShardGeometry g = geometry(p);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t m = 0; m < g.local_mid; ++m)
      for (int64_t i = 0; i < g.inner; ++i)
        global[size_t((o * g.global_mid + g.offset + m) * g.inner + i)] = local[size_t((o * g.local_mid + m) * g.inner + i)];
}

std::vector<double> download(LayerKernels& k, const Tensor& t) {
  std::vector<uint8_t> bytes(t.bytes());
  k.copy_to_host(bytes.data(), t);
  std::vector<double> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == DType::F32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      out[i] = f;
    } else if (t.dtype == DType::BF16) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = from_bf16(h);
    } else {
      throw Error(std::string("test: cannot read a ") + dtype_name(t.dtype) + " tensor");
    }
  }
  return out;
}

OwnedTensor activation(LayerKernels& k, const ModelSpec& m) {
  return k.allocate({m.seq_len, m.micro_batch, m.hidden}, k.activation_dtype());
}

Tensor host_ids(std::vector<int32_t>& ids, const ModelSpec& m) {
  Tensor t;
  t.data = ids.data();
  t.dtype = DType::I32;
  t.shape = {m.seq_len, m.micro_batch};
  t.device = Device{MemoryKind::Host, 0};
  return t;
}

void initialize(LayerKernels& k, const std::vector<ParamRef>& params, uint64_t seed) {
  for (const ParamRef& p : params) {
    k.copy_from_host(p.master, slice(global_values(p.name, p.global_shape, seed), p).data());
    k.fill_zero(p.grad);
  }
  k.params_updated();
}

// Global-shaped gradients (a rank's part placed where it belongs), by name.
using Named = std::map<std::string, std::vector<double>>;
void collect(LayerKernels& k, const std::vector<ParamRef>& params, const std::function<const Tensor&(const ParamRef&)>& which,
             Named& out) {
  for (const ParamRef& p : params) {
    auto& global = out[p.name];
    if (global.empty()) global.assign(size_t(numel(p.global_shape)), 0.0);
    place(global, download(k, which(p)), p);
  }
}

struct Inputs {
  ModelSpec model;
  MicroBatch mb;
  std::vector<int32_t> tokens, targets;
};

Inputs random_inputs() {
  Inputs in;
  in.model = ptdp::test::small_gpt_spec();
  in.mb.slot = 0;
  in.mb.step = 7;
  in.mb.first_sample = 3;
  std::uniform_int_distribution<int32_t> id(0, in.model.vocab - 1);
  in.tokens.resize(size_t(in.model.seq_len) * in.model.micro_batch);
  in.targets.resize(in.tokens.size());
  for (auto& t : in.tokens) t = id(rng());
  for (auto& t : in.targets) t = id(rng());
  return in;
}

struct ModelRun {
  double loss = 0;
  std::vector<std::vector<double>> forward;   // embedding output, then each block's output
  std::vector<std::vector<double>> backward;  // gradient of each block's input, then of the head's input
  Named grads;
  std::vector<ParamRef> params;
  std::shared_ptr<EmbeddingLayer> embedding;
  std::vector<std::shared_ptr<TransformerBlock>> blocks;
  std::shared_ptr<HeadLayer> head;
};

// Binds `k` as rank tp_rank of tp_size and runs forward and backward of the whole model once.
ModelRun run_model(LayerKernels& k, Communicator* tp, int tp_rank, int tp_size, Inputs in) {
  const ModelSpec& m = in.model;
  KernelsBinding binding;
  binding.model = m;
  binding.tp_rank = tp_rank;
  binding.tp_size = tp_size;
  binding.tp = tp;
  k.bind(binding);
  ModelRun run;
  run.embedding = k.make_embedding();
  for (int i = 0; i < m.layers; ++i) run.blocks.push_back(k.make_block(i));
  run.head = k.make_head(run.embedding.get());
  for (auto& p : run.embedding->parameters()) run.params.push_back(p);
  for (auto& b : run.blocks)
    for (auto& p : b->parameters()) run.params.push_back(p);
  for (auto& p : run.head->parameters()) run.params.push_back(p);
  initialize(k, run.params, m.seed);

  std::vector<OwnedTensor> acts, grads;
  for (int i = 0; i <= m.layers; ++i) {
    acts.push_back(activation(k, m));
    grads.push_back(activation(k, m));
  }
  OwnedTensor loss = k.allocate({1}, DType::F32);
  run.embedding->forward(in.mb, host_ids(in.tokens, m), acts[0].view, true);
  for (int i = 0; i < m.layers; ++i) run.blocks[size_t(i)]->forward(in.mb, acts[size_t(i)].view, acts[size_t(i + 1)].view, true);
  run.head->forward(in.mb, acts[size_t(m.layers)].view, host_ids(in.targets, m), loss.view, true);
  run.head->backward(in.mb, 0.5f, grads[size_t(m.layers)].view);
  for (int i = m.layers - 1; i >= 0; --i)
    run.blocks[size_t(i)]->backward(in.mb, grads[size_t(i + 1)].view, grads[size_t(i)].view);
  run.embedding->backward(in.mb, grads[0].view);
  k.synchronize();

  run.loss = download(k, loss.view)[0];
  for (int i = 0; i <= m.layers; ++i) {
    run.forward.push_back(download(k, acts[size_t(i)].view));
    run.backward.push_back(download(k, grads[size_t(i)].view));
  }
  collect(k, run.params, [](const ParamRef& p) -> const Tensor& { return p.grad; }, run.grads);
  return run;
}

std::string plugin_path(const std::string& dir, const char* name) {
  const std::string path = (std::filesystem::path(dir) / (std::string("libptdp-") + name + ".so")).string();
  if (!std::filesystem::exists(path)) throw Error(path + " does not exist");
  return path;
}

// Adam and the gradient norm from identical gradients: both plugins must agree to fp32 rounding.
// A large learning rate then makes a second forward's loss depend on the refreshed bf16 weights.
void check_optimizer(Checks& checks, const std::string& dir) {
  const Inputs in = random_inputs();
  SoloCommunicator solo_ref, solo_fused;
  LoadedKernels ref(plugin_path(dir, "kernels-ref"), {});
  LoadedKernels fused(plugin_path(dir, "kernels-fused"), {});
  const ModelRun r = run_model(*ref, &solo_ref, 0, 1, in);
  const ModelRun f = run_model(*fused, &solo_fused, 0, 1, in);
  std::vector<Tensor> ref_grads, fused_grads;
  for (const ParamRef& p : f.params) {
    const auto& g = r.grads.at(p.name);
    fused->copy_from_host(p.grad, std::vector<float>(g.begin(), g.end()).data());
    fused_grads.push_back(p.grad);
  }
  for (const ParamRef& p : r.params) ref_grads.push_back(p.grad);
  checks.close("sum_squares of the gradients", {fused->sum_squares(fused_grads)}, {ref->sum_squares(ref_grads)},
               kOptimizerTolerance);

  AdamStep step;
  step.step = 1;
  step.lr = 0.05f;
  step.weight_decay = 0.1f;
  step.grad_scale = 0.8f;
  ref->adam_step(r.params, step);
  fused->adam_step(f.params, step);
  Named rm, fm, rv, fv, rp, fp;
  collect(*ref, r.params, [](const ParamRef& p) -> const Tensor& { return p.master; }, rp);
  collect(*fused, f.params, [](const ParamRef& p) -> const Tensor& { return p.master; }, fp);
  collect(*ref, r.params, [](const ParamRef& p) -> const Tensor& { return p.exp_avg; }, rm);
  collect(*fused, f.params, [](const ParamRef& p) -> const Tensor& { return p.exp_avg; }, fm);
  collect(*ref, r.params, [](const ParamRef& p) -> const Tensor& { return p.exp_avg_sq; }, rv);
  collect(*fused, f.params, [](const ParamRef& p) -> const Tensor& { return p.exp_avg_sq; }, fv);
  for (const auto& [name, values] : rp) {
    checks.close("adam_step master " + name, fp[name], values, kOptimizerTolerance);
    checks.close("adam_step exp_avg " + name, fm[name], rm[name], kOptimizerTolerance);
    checks.close("adam_step exp_avg_sq " + name, fv[name], rv[name], kOptimizerTolerance);
  }

  auto second_loss = [&](LayerKernels& k, const ModelRun& run) {
    const ModelSpec& m = in.model;
    std::vector<int32_t> tokens = in.tokens, targets = in.targets;
    OwnedTensor a = activation(k, m), b = activation(k, m), loss = k.allocate({1}, DType::F32);
    MicroBatch mb = in.mb;
    mb.step = 8;
    run.embedding->forward(mb, host_ids(tokens, m), a.view, false);
    for (auto& block : run.blocks) {
      block->forward(mb, a.view, b.view, false);
      std::swap(a, b);
    }
    run.head->forward(mb, a.view, host_ids(targets, m), loss.view, false);
    return download(k, loss.view)[0];
  };
  const double ref_loss = second_loss(*ref, r), fused_loss = second_loss(*fused, f);
  checks.record("loss changed by the step", std::abs(ref_loss - r.loss) > 10 * kModelLossTolerance * std::abs(r.loss),
                "before " + std::to_string(r.loss) + ", after " + std::to_string(ref_loss));
  checks.close("loss after adam_step (bf16 working copies refreshed)", {fused_loss}, {ref_loss}, kModelLossTolerance);
}

// place_parameters moves masters (values kept) and gradients into one buffer the caller owns,
// and Adam over ranges of the placed parameters (a distributed optimizer's shards, moments in the
// caller's memory) gives the masters, and through the refreshed bf16 working copies the loss, of
// Adam over the whole unplaced parameters.
void check_placement(Checks& checks, const std::string& dir) {
  const Inputs in = random_inputs();
  SoloCommunicator solo_whole, solo_placed;
  LoadedKernels whole(plugin_path(dir, "kernels-fused"), {});
  LoadedKernels placed(plugin_path(dir, "kernels-fused"), {});
  const ModelRun w = run_model(*whole, &solo_whole, 0, 1, in);
  const ModelRun p = run_model(*placed, &solo_placed, 0, 1, in);
  int64_t total = 0;
  for (const ParamRef& r : p.params) total += (r.master.numel() + 63) / 64 * 64;
  OwnedTensor masters = placed->allocate({total}, DType::F32), grads = placed->allocate({total}, DType::F32);
  OwnedTensor exp_avg = placed->allocate({total}, DType::F32), exp_avg_sq = placed->allocate({total}, DType::F32);
  std::vector<ParamRef> moved = p.params, ranges;
  int64_t at = 0;
  for (ParamRef& r : moved) {
    const int64_t n = r.master.numel();
    const std::vector<int64_t> shape = r.master.shape;
    r.master = masters.view.flat_slice(at, n);
    r.master.shape = shape;
    r.grad = grads.view.flat_slice(at, n);
    r.grad.shape = shape;
    for (auto [offset, count] : {std::pair<int64_t, int64_t>{0, n / 3}, {n / 3, n - n / 3}}) {
      if (count == 0) continue;
      ParamRef range = r;
      range.master = masters.view.flat_slice(at + offset, count);
      range.grad = grads.view.flat_slice(at + offset, count);
      range.exp_avg = exp_avg.view.flat_slice(at + offset, count);
      range.exp_avg_sq = exp_avg_sq.view.flat_slice(at + offset, count);
      ranges.push_back(range);
    }
    at += (n + 63) / 64 * 64;
  }
  Named before, after;
  collect(*placed, p.params, [](const ParamRef& r) -> const Tensor& { return r.master; }, before);
  placed->place_parameters(moved);
  collect(*placed, moved, [](const ParamRef& r) -> const Tensor& { return r.master; }, after);
  for (const auto& [name, values] : before) checks.close("place_parameters keeps master " + name, after[name], values, 0.0);
  for (const ParamRef& r : p.embedding->parameters())
    checks.record("placed " + r.name + " lives in the buffer", r.master.data >= masters.view.data &&
                  r.master.data < static_cast<char*>(masters.view.data) + masters.view.bytes(), r.name);

  for (size_t i = 0; i < w.params.size(); ++i) {
    const auto& g = w.grads.at(w.params[i].name);
    std::vector<float> local = slice(std::vector<float>(g.begin(), g.end()), w.params[i]);
    whole->copy_from_host(w.params[i].grad, local.data());
    placed->copy_from_host(moved[i].grad, local.data());
  }
  AdamStep step;
  step.lr = 0.05f;
  step.weight_decay = 0.1f;
  whole->adam_step(w.params, step);
  placed->adam_step(ranges, step);
  Named wm, pm;
  collect(*whole, w.params, [](const ParamRef& r) -> const Tensor& { return r.master; }, wm);
  collect(*placed, moved, [](const ParamRef& r) -> const Tensor& { return r.master; }, pm);
  for (const auto& [name, values] : wm) checks.close("adam_step over ranges of placed " + name, pm[name], values, 0.0);

  auto loss_after = [&](LayerKernels& k, const ModelRun& run) {
    const ModelSpec& m = in.model;
    std::vector<int32_t> tokens = in.tokens, targets = in.targets;
    OwnedTensor a = activation(k, m), b = activation(k, m), loss = k.allocate({1}, DType::F32);
    run.embedding->forward(in.mb, host_ids(tokens, m), a.view, false);
    for (auto& block : run.blocks) {
      block->forward(in.mb, a.view, b.view, false);
      std::swap(a, b);
    }
    run.head->forward(in.mb, a.view, host_ids(targets, m), loss.view, false);
    return download(k, loss.view)[0];
  };
  checks.close("loss after adam_step over ranges (their working copies written)", {loss_after(*placed, p)},
               {loss_after(*whole, w)}, 0.0);
}

// Bad input gets a clear error, not a crash.
void expect_error(Checks& checks, const std::string& name, const std::string& needle, const std::function<void()>& body) {
  try {
    body();
    checks.record(name, false, "no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    checks.record(name, what.find(needle) != std::string::npos, what);
  }
}

void check_errors(Checks& checks, const std::string& dir) {
  const Inputs in = random_inputs();
  const ModelSpec& m = in.model;
  SoloCommunicator solo;
  LoadedKernels fused(plugin_path(dir, "kernels-fused"), {});
  LayerKernels& k = *fused;
  KernelsBinding binding;
  binding.model = m;
  binding.tp = &solo;
  k.bind(binding);
  expect_error(checks, "error: bind twice", "already", [&] { k.bind(binding); });
  expect_error(checks, "error: block index out of range", "2 layers", [&] { k.make_block(2); });
  auto embedding = k.make_embedding();
  auto block = k.make_block(0);
  auto head = k.make_head(embedding.get());
  OwnedTensor a = activation(k, m), b = activation(k, m), loss = k.allocate({1}, DType::F32);
  OwnedTensor wrong = k.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  std::vector<int32_t> tokens = in.tokens, targets = in.targets;
  expect_error(checks, "error: f32 activation", "must be bf16", [&] { block->forward(in.mb, wrong.view, b.view, true); });
  std::vector<int32_t> bad = tokens;
  bad[5] = m.vocab;
  expect_error(checks, "error: token id out of range", "token id 97",
               [&] { embedding->forward(in.mb, host_ids(bad, m), a.view, true); });
  expect_error(checks, "error: target id out of range", "token id 97",
               [&] { head->forward(in.mb, b.view, host_ids(bad, m), loss.view, true); });
  Tensor device_tokens = host_ids(tokens, m);
  device_tokens.device = Device{MemoryKind::Cuda, 0};
  expect_error(checks, "error: tokens in device memory", "host memory",
               [&] { embedding->forward(in.mb, device_tokens, a.view, true); });
  expect_error(checks, "error: sum_squares of bf16", "f32 tensors", [&] { k.sum_squares({a.view}); });

  LoadedKernels other(plugin_path(dir, "kernels-fused"), {});
  other->bind(binding);
  auto foreign = other->make_embedding();
  expect_error(checks, "error: head tied to another instance's embedding", "not made by this",
               [&] { k.make_head(foreign.get()); });
}

}  // namespace

void register_plugin_checks(const std::string& dir) {
  add_device_check("Plugin", "errors", [dir](Checks& checks, TestDevice&) { check_errors(checks, dir); });
  add_device_check("Plugin", "optimizer", [dir](Checks& checks, TestDevice&) { check_optimizer(checks, dir); });
  add_device_check("Plugin", "parameter placement", [dir](Checks& checks, TestDevice&) { check_placement(checks, dir); });
}

}  // namespace ptdp::fused::test
