#include "metrics/flops.hpp"

namespace ptdp {

namespace {

bool full_recompute(const RunConfig& config) { return config.parallel.recompute == "full"; }

double ffn_width(const RunConfig& config) {
  return config.model.ffn_hidden > 0 ? config.model.ffn_hidden : 4.0 * config.model.hidden;
}

bool standard_mlp(const RunConfig& config) { return ffn_width(config) == 4.0 * config.model.hidden; }

}  // namespace

double flops_per_step(const RunConfig& config) {
  const double B = config.parallel.global_batch, s = config.model.seq_len;
  const double l = config.model.layers, h = config.model.hidden, f = ffn_width(config);
  const double V = config.model.padded_vocab > 0 ? config.model.padded_vocab : config.model.vocab;
  // Forward FLOPs per token, 2 per multiply-add: a layer's QKV and output projections (4h²),
  // its two MLP GEMMs (2hf) and attention scores and values (2sh); the logits (hV).
  const double layer_forward = 2.0 * (4.0 * h * h + 2.0 * h * f + 2.0 * s * h);
  const double logits_forward = 2.0 * h * V;
  // Backward costs twice the forward; full recomputation runs each layer's forward once more,
  // but never the logits.
  const double layer_passes = full_recompute(config) ? 4.0 : 3.0;
  return B * s * (layer_passes * l * layer_forward + 3.0 * logits_forward);
}

const char* flops_formula_name(const RunConfig& config) {
  if (full_recompute(config))
    return standard_mlp(config)
               ? "96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) (full recomputation, paper Eq. 3)"
               : "96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) (full recomputation, paper Eq. 3) "
                 "with the MLP width ffn_hidden in place of 4h";
  return standard_mlp(config)
             ? "72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) (no recomputation)"
             : "72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) (no recomputation) "
               "with the MLP width ffn_hidden in place of 4h";
}

}  // namespace ptdp
