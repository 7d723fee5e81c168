#include "ab/ab_runner.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "ab/arm_job.hpp"
#include "metrics/metrics_reader.hpp"
#include "metrics/progress_line.hpp"
#include "runtime/stop_signal.hpp"

namespace ptdp {

namespace {

// The last non-blank line of a job's output: usually the error that ended it.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

// DIR/runs/<arm>-r<round>.jsonl and .log
std::string job_files(const AbRunOptions& options, const AbArm& arm, int round) {
  return fmt::format("{}/runs/{}-r{}", options.out_dir, arm.name, round);
}

// Nothing when a stop signal arrived while the job ran (the job was passed it and has stopped).
std::optional<ArmRound> run_round(const AbArm& arm, int round, int position, const AbRunOptions& options) {
  const std::string stem = job_files(options, arm, round);
  const std::string metrics = stem + ".jsonl", log = stem + ".log";
  std::vector<std::string> argv = {options.host_program, "run", arm.manifest};
  for (const auto& set : arm.sets) argv.insert(argv.end(), {"--set", set});
  argv.insert(argv.end(), {"--metrics", metrics});
  const ArmJobResult job = run_arm_job(argv, options.launcher, log);
  if (StopSignal::received() != 0) return std::nullopt;
  const std::string where = fmt::format("arm '{}', round {}", arm.name, round);
  if (job.exit_code != 0)
    throw Error(fmt::format("{}: ptdp-host run exited with status {} ({}); its output is in {}", where, job.exit_code,
                            last_line(log), log));
  ArmRound result{round, position, read_metrics_log(metrics), job.wall_s, job.peak_rss_bytes};
  int64_t samples = 0;
  for (const auto& step : result.steps) samples += step.step > options.method.warmup;
  if (samples < 2)
    throw Error(fmt::format("{}: {} logged {} step(s), {} after the {} warm-up step(s); at least 2 are needed", where,
                            metrics, result.steps.size(), samples, options.method.warmup));
  return result;
}

}  // namespace

std::vector<std::vector<size_t>> counterbalanced_order(size_t arms, int rounds) {
  std::vector<std::vector<size_t>> order;
  for (int r = 0; r < rounds; ++r) {
    std::vector<size_t> round;
    for (size_t i = 0; i < arms; ++i) round.push_back(r % 2 == 0 ? i : arms - 1 - i);
    order.push_back(round);
  }
  return order;
}

AbAnalysis run_ab(const std::vector<AbArm>& arms, const AbRunOptions& options) {
  const bool multi_node = !options.launcher.empty();
  for (const auto& arm : arms) {
    RunConfig config;
    try {
      config = validate_arm(arm, multi_node);
    } catch (const Error& e) {
      throw AbArmRefused(e.what());
    }
    if (config.run.steps < options.method.warmup + 2)
      throw AbArmRefused(fmt::format("arm '{}': run.steps = {} leaves fewer than 2 samples after {} warm-up steps; "
                              "give more --steps or fewer --warmup",
                              arm.name, config.run.steps, options.method.warmup));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir + "/runs", ec);
  if (ec) throw Error(fmt::format("{}: cannot create the output folder: {}", options.out_dir, ec.message()));

  std::vector<ArmSummary> summaries(arms.size());
  for (size_t i = 0; i < arms.size(); ++i) summaries[i].arm = arms[i];
  const auto order = counterbalanced_order(arms.size(), options.method.rounds);
  const size_t jobs = arms.size() * order.size();
  size_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t r = 0; r < order.size(); ++r) {
    for (size_t position = 0; position < order[r].size(); ++position) {
      const size_t a = order[r][position];
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = done == 0 ? -1 : elapsed / static_cast<double>(done) * static_cast<double>(jobs - done);
      spdlog::info("ab: round {}/{}, arm {} (job {}/{}) | {} elapsed, ETA {}", r + 1, order.size(), arms[a].name,
                   done + 1, jobs, clock_time(elapsed), clock_time(eta));
      std::optional<ArmRound> round;
      if (StopSignal::received() == 0)  // a signal between jobs starts none
        round = run_round(arms[a], static_cast<int>(r + 1), static_cast<int>(position + 1), options);
      if (!round) {
        const int sig = StopSignal::received();
        throw AbStopped(sig, fmt::format("ab: stopped by {} during arm '{}', round {}/{} (job {}/{}); {} job{} "
                                         "finished, and the metrics and logs of every job so far are in {}/runs "
                                         "(this job's: {}.log); no report was written",
                                         signal_name(sig), arms[a].name, r + 1, order.size(), done + 1, jobs, done,
                                         done == 1 ? "" : "s", options.out_dir,
                                         job_files(options, arms[a], static_cast<int>(r + 1))));
      }
      if (r == 0) summaries[a].header = read_run_header(job_files(options, arms[a], 1) + ".jsonl");
      summaries[a].rounds.push_back(std::move(*round));
      ++done;
    }
  }
  return analyse_ab(std::move(summaries), options.method);
}

}  // namespace ptdp
