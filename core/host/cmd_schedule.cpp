// ptdp-host schedule --scheduler NAME --stages P [--chunks V] --microbatches M [...]: loads a
// scheduler plugin, lowers and verifies its schedule the way a run does, simulates it, and shows
// each stage's ops, the verdict, the bubble and the peak activations; optionally as JSON, an SVG
// timeline and a Chrome trace. Exit status 0 for a verified schedule, 1 when the scheduler refuses
// the shape or the schedule fails verification, 2 when the plugin cannot be loaded, an output
// cannot be written or the shape is beyond kMaxSchedulePasses.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "command_registry.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "schedule/op_label.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_shape.hpp"
#include "schedule/schedule_simulator.hpp"
#include "schedule/schedule_timeline.hpp"
#include "schedule/trace_op_costs.hpp"

namespace ptdp::host {
namespace {

struct ScheduleOptions {
  std::string scheduler;
  std::vector<std::string> plugin_paths;
  ScheduleShape shape;
  SimulationOptions simulation;
  bool json = false;
  std::string svg_file;
  std::string trace_file;
  std::vector<std::string> plugin_options;  // KEY=VALUE, the scheduler's configuration
  std::string costs_trace;                  // a run's --trace, whose op times replace the --t-* options
};

// Everything the command found out; the parts after a failure stay empty.
struct ScheduleOutcome {
  std::string scheduler_name;  // the plugin's own name, also when it was given as a path
  std::string plugin_path;
  std::optional<std::vector<std::vector<ComputeOp>>> ops;
  std::optional<ScheduleReport> report;
  std::optional<SimulationResult> simulation;
  size_t transfers = 0, groups = 0;  // point-to-point messages; groups over all stages
  std::string error;  // why the schedule is not valid
};

std::string number(double x) { return fmt::format("{:.6g}", x); }

std::string formula_text(const ScheduleShape& shape) { return shape.chunks > 1 ? "(p-1)/(v*m)" : "(p-1)/m"; }

bool splits_backward(const std::vector<std::vector<ComputeOp>>& ops) {
  for (const auto& stage : ops)
    for (const ComputeOp& op : stage)
      if (op.kind == OpKind::BackwardWeight) return true;
  return false;
}

void write_file(const std::string& path, const std::string& what, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << content;
  if (!out) throw Error(what + " " + path + ": cannot write the file");
}

// --option KEY=VALUE as the scheduler's table: VALUE is a TOML value, or else a string.
toml::table option_table(const std::vector<std::string>& entries) {
  toml::table table;
  for (const std::string& entry : entries) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--option " + entry + ": expected KEY=VALUE");
    const std::string key = entry.substr(0, eq), value = entry.substr(eq + 1);
    try {
      toml::table parsed = toml::parse("v = " + value);
      table.insert(key, *parsed.get("v"));
    } catch (const toml::parse_error&) {
      table.insert(key, value);
    }
  }
  return table;
}

ScheduleOutcome plan(const ScheduleOptions& options) {
  ScheduleOutcome outcome;
  std::shared_ptr<Scheduler> scheduler;
  try {
    PluginRegistry registry(PluginRegistry::default_search_path(options.plugin_paths));
    const PluginInfo& info = registry.load(options.scheduler, PluginKind::Scheduler);
    outcome.plugin_path = info.path;
    outcome.scheduler_name = info.descriptor->name;
    scheduler = create_plugin<Scheduler>(info, option_table(options.plugin_options));
  } catch (const Error& e) {
    std::cerr << "schedule: " << e.what() << "\n";
    throw CLI::RuntimeError(2);
  }
  try {
    outcome.ops = collect_schedule(*scheduler, options.shape);
    const std::vector<InstructionStream> streams = lower_schedule(options.shape, *outcome.ops);
    outcome.report = verify_schedule(options.shape, *outcome.ops, streams);
    for (const InstructionStream& stream : streams)
      for (const Instruction& instruction : stream)
        if (instruction.kind == Instruction::Kind::Exchange) {
          ++outcome.groups;
          for (const Transfer& t : instruction.transfers)
            outcome.transfers += t.direction == Transfer::Direction::Send ? 1 : 0;
        }
    outcome.simulation = simulate_schedule(options.shape, streams, options.simulation);
  } catch (const Error& e) {
    outcome.error = e.what();
  }
  return outcome;
}

void print_text(const ScheduleOptions& options, const ScheduleOutcome& outcome) {
  const ScheduleShape& shape = options.shape;
  std::cout << fmt::format("{}: p = {}, v = {}, m = {}  ({})\n", outcome.scheduler_name, shape.stages, shape.chunks,
                           shape.microbatches, outcome.plugin_path);
  if (outcome.ops) {
    std::cout << (shape.chunks > 1 ? "ops per stage (Fm.c / Bm.c: forward / backward of microbatch m through chunk c"
                                   : "ops per stage (Fm / Bm: forward / backward of microbatch m")
              << (splits_backward(*outcome.ops) ? "; a split backward's Bm is its input gradient, Wm its weight gradients"
                                                : "")
              << "):\n";
    for (int s = 0; s < shape.stages; ++s) {
      std::string line = fmt::format("  stage {}:", s);
      for (const ComputeOp& op : (*outcome.ops)[s]) {
        line += ' ';
        line += op_label(op, shape.chunks);
      }
      std::cout << line << "\n";
    }
  }
  if (!outcome.simulation) {
    std::cout << (outcome.ops ? "NOT VALID: " : "REFUSED by the scheduler: ") << outcome.error << "\n";
    return;
  }
  const SimulationResult& sim = *outcome.simulation;
  std::cout << fmt::format(
      "verified: every (microbatch, chunk) has one forward and one backward (whole, or B then W), in order, on its "
      "stage; the {} "
      "instruction streams ({} transfers in {} groups) run to the end together under blocking grouped send/recv\n",
      shape.stages, outcome.transfers, outcome.groups);
  const SimulationOptions& times = options.simulation;
  if (splits_backward(*outcome.ops)) {
    std::cout << fmt::format("bubble fraction: {} simulated ({} within a stage's span); the zero-bubble paper's "
                             "ZB-H1 (p-1)(T_F+T_B-T_W) gives {}, ZB-H2 (p-1)(T_F+T_B-2T_W) {}, 1F1B {} {}\n",
                             number(sim.bubble_fraction), number(sim.span_bubble_fraction),
                             number(formula_bubble_fraction_zb_h1(shape, times)),
                             number(formula_bubble_fraction_zb_h2(shape, times)), formula_text(shape),
                             number(formula_bubble_fraction(shape)));
  } else {
    std::cout << fmt::format("bubble fraction: {} simulated, {} by the paper's formula {}\n",
                             number(sim.bubble_fraction), number(formula_bubble_fraction(shape)), formula_text(shape));
  }
  std::cout << fmt::format("  (t_f = {}, t_b = {}{} per microbatch and stage, transfer latency {}, "
                           "transfers {}: makespan {}, ideal m*(t_f + t_b) = {})\n",
                           number(times.t_forward), number(times.t_backward),
                           splits_backward(*outcome.ops) ? " (of it t_w = " + number(times.weight_time()) + ")" : "",
                           number(times.transfer_latency),
                           times.transfers_posted_ahead ? "posted ahead" : "in blocking groups", number(sim.makespan),
                           number(sim.ideal));
  std::string peaks;
  for (int peak : outcome.report->peak_activations) peaks += fmt::format(" {}", peak);
  std::cout << "peak activations per stage (" << (shape.chunks > 1 ? "microbatch-chunks" : "microbatches")
            << " alive at once):" << peaks << "\n";
  if (!options.svg_file.empty()) std::cout << "svg: " << options.svg_file << "\n";
  if (!options.trace_file.empty()) std::cout << "trace: " << options.trace_file << "\n";
}

nlohmann::json to_json(const ScheduleOptions& options, const ScheduleOutcome& outcome) {
  const ScheduleShape& shape = options.shape;
  nlohmann::json doc = {{"scheduler", outcome.scheduler_name},
                        {"plugin", outcome.plugin_path},
                        {"p", shape.stages},
                        {"v", shape.chunks},
                        {"m", shape.microbatches},
                        {"t_forward", options.simulation.t_forward},
                        {"t_backward", options.simulation.t_backward},
                        {"transfer_latency", options.simulation.transfer_latency},
                        {"t_weight", options.simulation.weight_time()},
                        {"transfers_posted_ahead", options.simulation.transfers_posted_ahead},
                        {"valid", outcome.simulation.has_value()},
                        {"refused", !outcome.ops.has_value()},
                        {"error", outcome.simulation ? nlohmann::json(nullptr) : nlohmann::json(outcome.error)},
                        {"formula_bubble_fraction", formula_bubble_fraction(shape)},
                        {"bubble_fraction", nullptr},
                        {"span_bubble_fraction", nullptr},
                        {"makespan", nullptr},
                        {"ideal", nullptr},
                        {"peak_activations", nullptr},
                        {"stages", nullptr}};
  if (outcome.simulation) {
    doc["bubble_fraction"] = outcome.simulation->bubble_fraction;
    doc["span_bubble_fraction"] = outcome.simulation->span_bubble_fraction;
    doc["makespan"] = outcome.simulation->makespan;
    doc["ideal"] = outcome.simulation->ideal;
    doc["peak_activations"] = outcome.report->peak_activations;
    doc["transfers"] = outcome.transfers;
    doc["groups"] = outcome.groups;
  }
  if (outcome.ops) {
    nlohmann::json stages = nlohmann::json::array();
    for (int s = 0; s < shape.stages; ++s) {
      nlohmann::json ops = nlohmann::json::array();
      const auto& stage_ops = (*outcome.ops)[s];
      for (size_t i = 0; i < stage_ops.size(); ++i) {
        const ComputeOp& op = stage_ops[i];
        nlohmann::json entry = {{"op", op_label(op, shape.chunks)},
                                {"kind", op_kind_category(op.kind)},
                                {"microbatch", op.microbatch},
                                {"chunk", op.chunk}};
        if (outcome.simulation) {
          entry["start"] = outcome.simulation->timelines[s][i].start;
          entry["end"] = outcome.simulation->timelines[s][i].end;
        }
        ops.push_back(std::move(entry));
      }
      stages.push_back(std::move(ops));
    }
    doc["stages"] = std::move(stages);
  }
  return doc;
}

void run_schedule(ScheduleOptions options) {
  const ScheduleShape& shape = options.shape;
  if (schedule_passes(shape.stages, shape.chunks, shape.microbatches) > kMaxSchedulePasses) {
    std::cerr << fmt::format("schedule: --microbatches {}: p*v*m = {} microbatch passes a step, more than the {} a "
                             "schedule is built for; use fewer microbatches\n",
                             shape.microbatches, schedule_passes(shape.stages, shape.chunks, shape.microbatches),
                             kMaxSchedulePasses);
    throw CLI::RuntimeError(2);
  }
  if (!options.costs_trace.empty()) {
    try {
      options.simulation = op_costs_from_trace(options.costs_trace, shape.chunks, options.simulation);
    } catch (const Error& e) {
      std::cerr << "schedule: --costs-from-trace " << e.what() << "\n";
      throw CLI::RuntimeError(2);
    }
  }
  const ScheduleOutcome outcome = plan(options);
  if (outcome.simulation) {
    const TimelineLabels labels{outcome.scheduler_name};
    try {
      if (!options.svg_file.empty())
        write_file(options.svg_file, "svg",
                   render_timeline_svg(options.shape, options.simulation, *outcome.simulation, labels));
      if (!options.trace_file.empty()) {
        ChromeTrace trace;
        add_timeline_to_trace(trace, 0, options.shape, *outcome.simulation, labels);
        trace.write(options.trace_file);
      }
    } catch (const Error& e) {
      std::cerr << "schedule: " << e.what() << "\n";
      throw CLI::RuntimeError(2);
    }
  }
  if (options.json)
    std::cout << to_json(options, outcome).dump() << "\n";
  else
    print_text(options, outcome);
  if (!outcome.simulation) throw CLI::RuntimeError(1);
}

void add_schedule(CLI::App& root) {
  auto options = std::make_shared<ScheduleOptions>();
  CLI::App* cmd = root.add_subcommand(
      "schedule",
      "Verify and simulate a pipeline schedule: each stage's ops, deadlock freedom, bubble, peak activations");
  cmd->add_option("--scheduler", options->scheduler, "Scheduler plugin: a name (sched-1f1b) or a path to a .so")
      ->required();
  cmd->add_option("--stages,-p", options->shape.stages, "Pipeline stages p")->required()->check(CLI::Range(1, 4096));
  cmd->add_option("--chunks,-v", options->shape.chunks, "Model chunks per stage v (interleaving)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--microbatches,-m", options->shape.microbatches, "Microbatches per pipeline and step m")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--t-forward", options->simulation.t_forward,
                  "Time of one microbatch's forward through a whole stage, in ms (a chunk takes 1/v)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--t-backward", options->simulation.t_backward,
                  "Time of one microbatch's backward through a whole stage, in ms")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--t-weight", options->simulation.t_weight,
                  "Of --t-backward, the part a split backward's weight gradients (W) take, in ms; 0: half")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--posted-ahead", options->simulation.transfers_posted_ahead,
                "Simulate transfers posted ahead (asynchronous send/recv) instead of blocking groups: the model "
                "under which a split backward's W fills the bubble");
  cmd->add_option("--option", options->plugin_options,
                  "A scheduler option KEY=VALUE (repeatable), as under [plugins.options.scheduler] of a manifest")
      ->type_name("KEY=VALUE");
  cmd->add_option("--costs-from-trace", options->costs_trace,
                  "Take t_f, t_b and t_w from a run's --trace: the median span of each kind of op (replaces "
                  "--t-forward, --t-backward and --t-weight)")
      ->type_name("FILE");
  cmd->add_option("--transfer-latency", options->simulation.transfer_latency,
                  "Time from both ends of a transfer being posted to its completion, in ms")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", options->json,
                "Print one JSON object: valid, error, bubble_fraction, formula_bubble_fraction, peak_activations, "
                "stages (ops per stage with simulated start and end)");
  cmd->add_option("--svg", options->svg_file, "Draw the simulated timeline to this SVG file")->type_name("FILE");
  cmd->add_option("--trace", options->trace_file, "Write the simulated timeline as a Chrome/Perfetto trace (JSON)")
      ->type_name("FILE");
  cmd->add_option("--path", options->plugin_paths,
                  "Folder searched for plugins first, before PTDP_PLUGIN_PATH and the install's plugin dir "
                  "(repeatable)")
      ->type_name("DIR");
  cmd->footer(fmt::format("Exit status: 0 verified, 1 refused by the scheduler or failed verification, 2 plugin or "
                          "file problem or a shape of more than {} microbatch passes (p*v*m).",
                          kMaxSchedulePasses));
  cmd->callback([options] { run_schedule(*options); });
}

const RegisterHostCommand registration({"schedule", 30, add_schedule});

}  // namespace
}  // namespace ptdp::host
