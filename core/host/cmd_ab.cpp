// ptdp-host ab: A/B comparison of arms (a manifest with --set overrides, or several manifests):
// step times over counterbalanced rounds, the ratio of medians with its bootstrap interval, a
// Mann-Whitney test, and whether the arms trained the same model. docs/ab-testing.md.
// Exit status 0 when the report is written, 2 for arms or options refused before any job runs,
// 1 when a job fails, 128 + the signal when SIGTERM, SIGUSR1 or SIGINT stopped it (the running job
// is passed the signal and stops after its step; the line says which job and where the rest is).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "ab/ab_report.hpp"
#include "ab/ab_report_svg.hpp"
#include "ab/ab_runner.hpp"
#include "ab/arm_job.hpp"
#include "ab/arm_schedule_picture.hpp"
#include "command_registry.hpp"
#include "manifest/manifest_loader.hpp"
#include "runtime/stop_signal.hpp"
#include "ptdp/error.hpp"

namespace ptdp::host {
namespace {

struct AbOptions {
  std::vector<std::string> manifests, arm_names, sets;
  int rounds = 5, steps = 0, warmup = 3;
  std::string out, launcher;
  double loss_tolerance = 0, min_effect = 0.01, confidence = 0.95, alpha = 0.05;
};

// Refusals of the command line, before anything runs (exit status 2).
struct Refusal : Error {
  using Error::Error;
};

std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[64];
  std::strftime(text, sizeof(text), format, &utc);
  return text;
}

std::string stem_of(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// Walks the options in command-line order: a --set belongs to the --arm before it, or to every
// arm when no --arm came yet. With several manifests and no --arm, each manifest is an arm.
std::vector<AbArm> arms_from_command_line(const CLI::App& command, const AbOptions& options,
                                          std::vector<std::string>& common) {
  std::vector<AbArm> arms;
  size_t next_set = 0, next_arm = 0;
  for (const CLI::Option* option : command.parse_order()) {
    if (option->get_name() == "--arm") {
      if (options.manifests.size() != 1)
        throw Refusal("--arm takes one manifest (its arms differ by --set); several manifests are each an arm");
      arms.push_back({options.arm_names.at(next_arm++), options.manifests.front(), common});
    } else if (option->get_name() == "--set") {
      (arms.empty() ? common : arms.back().sets).push_back(options.sets.at(next_set++));
    }
  }
  if (arms.empty()) {
    if (options.manifests.size() < 2)
      throw Refusal("an A/B needs two arms: --arm NAME [--set k=v]... twice, or two or more manifests");
    std::set<std::string> stems;
    for (const auto& m : options.manifests) stems.insert(stem_of(m));
    for (size_t i = 0; i < options.manifests.size(); ++i) {
      // Manifests of one name in different folders are told apart by their place on the line.
      const std::string name = stems.size() == options.manifests.size() ? stem_of(options.manifests[i])
                                                                        : fmt::format("{}-{}", stem_of(options.manifests[i]), i + 1);
      arms.push_back({name, options.manifests[i], common});
    }
  }
  if (arms.size() < 2) throw Refusal("an A/B needs two arms; one --arm was given");
  std::set<std::string> names;
  for (const auto& arm : arms) {
    if (auto problem = arm_name_problem(arm.name); !problem.empty()) throw Refusal(problem);
    if (!names.insert(arm.name).second) throw Refusal(fmt::format("arm '{}' is named twice", arm.name));
  }
  return arms;
}

// The command as it could be typed again, for the report.
std::string command_line(const std::vector<AbArm>& arms, const std::vector<std::string>& common, const AbOptions& o) {
  std::string line = "ptdp-host ab";
  for (const auto& m : o.manifests) line.append(" ").append(shell_quoted(m));
  for (const auto& set : common) line.append(" --set ").append(shell_quoted(set));
  if (!o.arm_names.empty())
    for (const auto& arm : arms) {
      line.append(" --arm ").append(shell_quoted(arm.name));
      for (size_t i = common.size(); i < arm.sets.size(); ++i) line.append(" --set ").append(shell_quoted(arm.sets[i]));
    }
  line += fmt::format(" --rounds {} --warmup {}", o.rounds, o.warmup);
  if (o.confidence != 0.95 || o.alpha != 0.05) line += fmt::format(" --confidence {} --alpha {}", o.confidence, o.alpha);
  if (o.min_effect != 0.01) line += fmt::format(" --min-effect {}", o.min_effect);
  if (o.loss_tolerance > 0) line += fmt::format(" --loss-tolerance {}", o.loss_tolerance);
  if (o.steps > 0) line += fmt::format(" --steps {}", o.steps);
  if (!o.launcher.empty()) line.append(" --launcher ").append(shell_quoted(o.launcher));
  return line.append(" --out ").append(shell_quoted(o.out));
}

std::string this_program() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the ptdp-host binary (/proc/self/exe): " + ec.message());
  return path.string();
}

void ab(const CLI::App& command, AbOptions options) {
  if (options.rounds < 1) throw Refusal(fmt::format("--rounds {}: at least 1", options.rounds));
  if (options.warmup < 0) throw Refusal(fmt::format("--warmup {}: cannot be negative", options.warmup));
  if (options.steps < 0) throw Refusal(fmt::format("--steps {}: cannot be negative", options.steps));
  if (!(options.confidence > 0 && options.confidence < 1))
    throw Refusal(fmt::format("--confidence {}: must lie between 0 and 1", options.confidence));
  if (!(options.alpha > 0 && options.alpha < 1))
    throw Refusal(fmt::format("--alpha {}: must lie between 0 and 1", options.alpha));
  // Comparisons with NaN are false, so each bound is written to refuse it too.
  if (!(options.min_effect >= 0 && options.min_effect < 1))
    throw Refusal(fmt::format("--min-effect {}: must be at least 0 and below 1", options.min_effect));
  if (!(options.loss_tolerance >= 0 && options.loss_tolerance < 1))
    throw Refusal(fmt::format("--loss-tolerance {}: must be above 0 and below 1", options.loss_tolerance));
  if (options.out.empty()) options.out = "ab-" + utc_now("%Y%m%d-%H%M%S");
  if (std::filesystem::exists(options.out + "/report.json"))
    throw Refusal(options.out + ": holds an earlier A/B report; give another --out");
  std::vector<std::string> common;
  std::vector<AbArm> arms = arms_from_command_line(command, options, common);
  const std::string command_text = command_line(arms, common, options);
  // Every round trains from step 0: no arm may resume another round's checkpoint.
  for (auto& arm : arms) {
    if (options.steps > 0) arm.sets.push_back(fmt::format("run.steps={}", options.steps));
    arm.sets.push_back("checkpoint.dir=\"\"");
  }
  AbRunOptions run;
  run.out_dir = options.out;
  run.launcher = options.launcher;
  run.host_program = this_program();
  run.method.rounds = options.rounds;
  run.method.warmup = options.warmup;
  run.method.min_effect = options.min_effect;
  run.method.confidence = options.confidence;
  run.method.alpha = options.alpha;
  if (options.loss_tolerance > 0) run.method.loss_tolerance = options.loss_tolerance;

  AbAnalysis analysis;
  try {
    const StopSignal stop;  // SIGTERM, SIGUSR1 or SIGINT stop the running job and the A/B, saying so
    analysis = run_ab(arms, run);
  } catch (const AbArmRefused& e) {
    throw Refusal(e.what());  // bad input, like a bad option; a job that fails is a failed run
  }
  AbContext context;
  context.command = command_text;
  context.date = utc_now("%Y-%m-%dT%H:%M:%SZ");
  context.launcher = options.launcher;
  context.steps = options.steps;
  for (const auto& round : counterbalanced_order(arms.size(), options.rounds)) {
    std::vector<std::string> names;
    for (size_t a : round) names.push_back(arms[a].name);
    context.order.push_back(names);
  }
  for (const AbArm& arm : arms) {
    const std::string picture = "schedule-" + arm.name + ".svg";
    write_report_file(options.out + "/" + picture, arm_schedule_svg(load_manifest(arm.manifest, arm.sets)));
    context.schedule_pictures.push_back(picture);
  }
  write_report_file(options.out + "/report.json", ab_report_json(analysis, run.method, context).dump(2) + "\n");
  const std::string markdown = ab_report_markdown(analysis, run.method, context);
  write_report_file(options.out + "/report.md", markdown);
  write_report_file(options.out + "/report.svg", ab_report_svg(analysis, run.method.warmup));
  std::cout << markdown << "\n" << options.out << "/report.{json,md,svg} and schedule-<arm>.svg written\n";
}

void add_ab_command(CLI::App& root) {
  auto options = std::make_shared<AbOptions>();
  auto* command = root.add_subcommand("ab", "A/B test plugins and settings: arms timed over counterbalanced rounds, "
                                            "with confidence intervals and loss parity (docs/ab-testing.md)");
  command->add_option("MANIFEST", options->manifests,
                      "One manifest whose arms differ by --set, or several manifests, each an arm named after it")
      ->required();
  command->add_option("--arm", options->arm_names, "Start an arm: the --set options after it are its own (repeatable)")
      ->allow_extra_args(false);
  command->add_option("--set", options->sets,
                      "Override a manifest key; before the first --arm it applies to every arm (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  command->add_option("--rounds", options->rounds, "Jobs per arm, in counterbalanced order")->capture_default_str();
  command->add_option("--steps", options->steps, "Training steps per job (default: each manifest's run.steps)");
  command->add_option("--warmup", options->warmup, "Leading steps of each job that are not samples")
      ->capture_default_str();
  command->add_option("--out", options->out, "Output folder (default: ab-<UTC date-time>)");
  command->add_option("--launcher", options->launcher,
                      "Start each job through this command, e.g. 'srun -N 2 --ntasks-per-node 8' (shell words)");
  command->add_option("--loss-tolerance", options->loss_tolerance,
                      "Largest relative loss difference of equivalent arms (default 1e-4, 2e-2 with bf16)");
  command->add_option("--confidence", options->confidence, "Confidence of the bootstrap interval of the ratio")
      ->capture_default_str();
  command->add_option("--alpha", options->alpha, "p-value below which a difference can be called")
      ->capture_default_str();
  command->add_option("--min-effect", options->min_effect, "Smallest |ratio - 1| called faster or slower")
      ->capture_default_str();
  command->callback([command, options] {
    try {
      ab(*command, *options);
    } catch (const Refusal& e) {
      std::cerr << e.what() << "\n";
      throw CLI::RuntimeError(2);
    } catch (const AbStopped& e) {
      std::cerr << e.what() << "\n";
      throw CLI::RuntimeError(128 + e.signal);
    } catch (const Error& e) {
      std::cerr << e.what() << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

const RegisterHostCommand registration{{"ab", 15, add_ab_command}};

}  // namespace
}  // namespace ptdp::host
