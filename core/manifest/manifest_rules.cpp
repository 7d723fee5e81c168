#include "manifest/manifest_rules.hpp"

#include <fmt/format.h>

#include <cstdint>

#include <ptdp/activation_recompute.hpp>
#include <ptdp/message_text.hpp>

#include "schedule/schedule_shape.hpp"

namespace ptdp {

void apply_manifest_rules(RunConfig& c, const ManifestLocator& at) {
  auto& model = c.model;
  const auto& par = c.parallel;
  // Products in 64 bits: each factor is bounded by its key's range, so none of these overflow.
  const int64_t p = par.pipeline, t = par.tensor, d = par.data, v = par.virtual_stages;
  // Each rule is reported on its first key unless an override set one of the others.
  auto fail = [&](std::initializer_list<std::string_view> keys, const std::string& reason) {
    at.fail(at.blame(keys), reason);
  };

  if (model.hidden % model.heads != 0)
    fail({"model.heads", "model.hidden"},
         fmt::format("hidden ({}) must be divisible by heads ({})", model.hidden, model.heads));
  if (model.ffn_hidden == 0) model.ffn_hidden = 4 * model.hidden;

  // Tensor parallelism splits the heads and the MLP's inner dimension across the group.
  if (model.heads % t != 0)
    fail({"parallel.tensor", "model.heads"}, fmt::format("heads ({}) must be divisible by tensor ({})", model.heads, t));
  if (model.ffn_hidden % t != 0)
    fail({"parallel.tensor", "model.ffn_hidden"},
         fmt::format("ffn_hidden ({}) must be divisible by tensor ({})", model.ffn_hidden, t));

  if (v > 1 && p == 1)
    fail({"parallel.virtual_stages", "parallel.pipeline"},
         fmt::format("interleaving (virtual_stages {}) needs pipeline >= 2", v));
  if (model.layers % (p * v) != 0) {
    if (v > 1)
      fail({"parallel.virtual_stages", "parallel.pipeline", "model.layers"},
           fmt::format("layers ({}) must be divisible by pipeline * virtual_stages ({} * {} = {})", model.layers, p,
                       v, p * v));
    fail({"parallel.pipeline", "model.layers"},
         fmt::format("layers ({}) must be divisible by pipeline ({})", model.layers, p));
  }

  const int64_t b = par.micro_batch, batch = par.global_batch;
  if (batch % (b * d) != 0)
    fail({"parallel.global_batch", "parallel.micro_batch", "parallel.data"},
         fmt::format("global_batch ({}) must be divisible by micro_batch * data ({} * {} = {})", batch, b, d, b * d));
  const int64_t m = batch / (b * d);
  if (v > 1 && m % p != 0)
    fail({"parallel.virtual_stages", "parallel.global_batch", "parallel.micro_batch", "parallel.data",
          "parallel.pipeline"},
         fmt::format("interleaving needs the microbatch count m = global_batch / (micro_batch * data) = {} "
                     "to be a multiple of pipeline ({})",
                     m, p));

  // Every op of the step's schedule is held at once while it is built, verified and simulated.
  if (schedule_passes(p, v, m) > kMaxSchedulePasses)
    fail({"parallel.global_batch", "parallel.micro_batch", "parallel.data", "parallel.pipeline",
          "parallel.virtual_stages"},
         fmt::format("m = global_batch / (micro_batch * data) = {} microbatches through pipeline * virtual_stages = "
                     "{} model chunks make {} passes a step, more than the {} a step's schedule is built for; "
                     "lower global_batch or raise micro_batch",
                     m, p * v, schedule_passes(p, v, m), kMaxSchedulePasses));

  const int64_t chunk_layers = model.layers / (p * v);
  if (par.recompute == "full" && chunk_layers % par.recompute_every != 0)
    fail({"parallel.recompute_every", "parallel.recompute"},
         fmt::format("{} must divide the layers of a model chunk, layers / (pipeline * virtual_stages) = {}",
                     par.recompute_every, chunk_layers));

  // Sequence parallelism splits the sequence over the tensor group outside the GEMMs.
  if (par.sequence_parallel && t == 1)
    fail({"parallel.sequence_parallel", "parallel.tensor"},
         "needs parallel.tensor > 1 (got 1): it splits the sequence over the tensor-parallel group");
  if (par.sequence_parallel && model.seq_len % t != 0)
    fail({"parallel.sequence_parallel", "model.seq_len", "parallel.tensor"},
         fmt::format("seq_len ({}) must be divisible by tensor ({})", model.seq_len, t));
  for (size_t i = 0; i < par.recompute_modules.size(); ++i) {
    const std::string& name = par.recompute_modules[i];
    if (recompute_module_bit(name) == 0)
      fail({"parallel.recompute_modules"},
           fmt::format("unknown module \"{}\" (modules: core_attention, layernorm, mlp_activation)", excerpt(name)));
    for (size_t j = 0; j < i; ++j)
      if (par.recompute_modules[j] == name)
        fail({"parallel.recompute_modules"}, fmt::format("lists \"{}\" twice", name));
  }
  if (par.selective_recompute() && par.recompute_modules.empty())
    fail({"parallel.recompute_modules", "parallel.recompute"},
         "is empty, so recompute = \"selective\" would recompute nothing; list modules or set recompute = \"none\"");

  // The vocab-parallel embedding gives each tensor rank an equal slice of rows.
  model.padded_vocab = static_cast<int>((model.vocab + t - 1) / t * t);
  if (model.padded_vocab != model.vocab)
    c.notes.push_back(
        fmt::format("model.vocab {} padded to {} so tensor={} divides it", model.vocab, model.padded_vocab, t));

  const auto& precision = c.precision;
  if (precision.fp16() && precision.loss_scale_initial < precision.loss_scale_min)
    fail({"precision.loss_scale_initial", "precision.loss_scale_min"},
         fmt::format("loss_scale_initial ({}) is below loss_scale_min ({}): the run would start below its smallest "
                     "loss scale",
                     precision.loss_scale_initial, precision.loss_scale_min));
  // Under fp16 a gradient that overflows skips its step; under FP8 the non-finite amax it gives
  // stops the run. The two would first have to agree on what an overflow is.
  if (precision.fp16() && precision.fp8_on())
    fail({"precision.fp8", "precision.params"},
         "precision.fp8 = \"hybrid\" does not run with precision.params = \"fp16\" (an overflow skips the step under "
         "fp16's loss scaling, but stops the run as a non-finite FP8 amax); use precision.params = \"bf16\" or "
         "\"fp32\" with FP8");
  if (precision.fp8_on() && precision.fp8_bf16_first_blocks + precision.fp8_bf16_last_blocks >= model.layers)
    fail({"precision.fp8_bf16_first_blocks", "precision.fp8_bf16_last_blocks", "model.layers"},
         fmt::format("keeps {} + {} of the {} blocks out of FP8, which leaves none to run in FP8; set precision.fp8 = "
                     "\"off\" instead",
                     precision.fp8_bf16_first_blocks, precision.fp8_bf16_last_blocks, model.layers));

  if (c.optimizer.min_lr > c.optimizer.lr)
    fail({"optimizer.min_lr", "optimizer.lr"},
         fmt::format("must not exceed optimizer.lr ({} > {})", c.optimizer.min_lr, c.optimizer.lr));
  if (c.checkpoint.every > 0 && c.checkpoint.dir.empty())
    fail({"checkpoint.every", "checkpoint.dir"}, "needs checkpoint.dir");
  if (!c.data.weights.empty() && c.data.weights.size() != c.data.path.size())
    fail({"data.weights", "data.path"},
         fmt::format("has {} weight{} for {} entr{} of data.path: a blend weighs each entry (a file or a glob)",
                     c.data.weights.size(), c.data.weights.size() == 1 ? "" : "s", c.data.path.size(),
                     c.data.path.size() == 1 ? "y" : "ies"));
  if (c.checkpoint.resume_step > 0 && c.checkpoint.resume_from.empty())
    fail({"checkpoint.resume_step", "checkpoint.resume_from"},
         "needs checkpoint.resume_from: the run starting from an earlier step writes its own line of steps, "
         "into another checkpoint.dir");
}

}  // namespace ptdp
