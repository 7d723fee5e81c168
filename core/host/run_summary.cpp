#include "run_summary.hpp"

#include <fmt/format.h>

#include "checkpoint/checkpoint_space.hpp"
#include "manifest/model_math.hpp"
#include "plan/memory_model.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp::host {

namespace {

std::string with_unit(double n) {
  if (n >= 1e12) return fmt::format("{:.2f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.2f}K", n / 1e3);
  return fmt::format("{}", n);
}

// What one rank of the busier end stage holds of the model state, as the trainer allocates it:
// the working weights (bf16 copies, or at fp32 precision the master weights themselves), fp32
// gradients, and the optimizer state: the two fp32 Adam moments and, where they are not the
// working weights, the fp32 master weights. The distributed optimizer divides the optimizer state
// by d, the master weights included (the backend then keeps its own working weights).
std::string model_state_per_rank(const RunConfig& c) {
  const auto& p = c.parallel;
  PlanLayout layout;
  layout.pipeline = p.pipeline;
  layout.tensor = p.tensor;
  layout.data = p.data;
  const double params = std::max(parameters_on_gpu(c.model, layout, 0), parameters_on_gpu(c.model, layout, p.pipeline - 1));
  auto bytes = [&](double per_parameter) { return byte_size(static_cast<uint64_t>(params * per_parameter)); };
  const bool bf16 = c.precision.params == "bf16";
  const double moments = 8.0, master = 4.0;
  return fmt::format("{:.4g} parameters per rank: working weights {} ({}), gradients {}, optimizer state {} without "
                     "the distributed optimizer, {} with it (d = {}; fp32 master weights and Adam moments){}",
                     params, bytes(bf16 ? 2 : 4), bf16 ? "bf16" : "fp32", bytes(4),
                     bytes(bf16 ? master + moments : moments), bytes((master + moments) / p.data), p.data,
                     p.distributed_optimizer ? "; parallel.distributed_optimizer is on" : "");
}

}  // namespace

std::string describe_run(const RunConfig& c) {
  const auto& m = c.model;
  const auto& p = c.parallel;
  const bool recompute = p.recompute == "full";
  std::string out;
  auto line = [&](std::string_view label, const std::string& text) { out += fmt::format("{:<12} {}\n", label, text); };
  line("manifest", c.source);
  line("world size", fmt::format("{} = pipeline {} x tensor {} x data {} ({} per node x {} node{})", p.world_size(),
                                 p.pipeline, p.tensor, p.data, c.launch.nproc_per_node, c.launch.nnodes,
                                 c.launch.nnodes == 1 ? "" : "s"));
  line("pipeline", fmt::format("virtual_stages v = {}, microbatches m = {}, bubble (p-1)/(v*m) = {:.4f}",
                               p.virtual_stages, p.microbatches(), formula_bubble_fraction(ScheduleShape{p.pipeline, p.virtual_stages, p.microbatches()})));
  line("batch", fmt::format("micro_batch b = {}, global_batch B = {}, scatter_gather {}, sequence_parallel {}, "
                            "recompute {}{}",
                            p.micro_batch, p.global_batch, p.scatter_gather ? "on" : "off",
                            p.sequence_parallel ? "on" : "off", p.recompute,
                            recompute                 ? fmt::format(" (recompute_every {})", p.recompute_every)
                            : p.selective_recompute() ? fmt::format(" ({})", fmt::join(p.recompute_modules, ", "))
                                                      : ""));
  line("model", fmt::format("{} layers, hidden {}, {} heads, seq_len {}, vocab {} (padded {}), ffn_hidden {}",
                            m.layers, m.hidden, m.heads, m.seq_len, m.vocab, m.padded_vocab, m.ffn_hidden));
  const int64_t params = parameter_count(m);
  line("parameters", fmt::format("{} ({}) by P = 12*l*h^2*(1 + 13/(12h) + (V+s)/(12*l*h))", params,
                                 with_unit(static_cast<double>(params))));
  line("flops/step", fmt::format("{:.3e} (paper Eq. 3, {} recomputation)", flops_per_step(c),
                                 recompute                          ? "with full"
                                 : recomputes_core_attention(p) ? "with selective (core_attention)"
                                                                    : "without"));
  line("memory", model_state_per_rank(c));
  line("plugins", fmt::format("communicator {}, kernels {}, scheduler {}, checkpoint {}", c.plugins.communicator,
                              c.plugins.kernels, c.plugins.scheduler, c.plugins.checkpoint));
  for (const std::string& note : c.notes) line("note", note);
  for (const std::string& warning : c.warnings) line("warning", warning);
  return out;
}

}  // namespace ptdp::host
