#pragma once
// One run of one arm: `ptdp-host run` as a child process (or under a launcher template for a
// multi-node arm), its output in a log file, its peak memory from the kernel's accounting.
#include <optional>
#include <string>
#include <vector>

namespace ptdp {

struct ArmJobResult {
  int exit_code = 0;  // 128 + signal when killed
  double wall_s = 0;
  // Largest resident set of any process of the job (the launcher and every rank it started,
  // from wait4's ru_maxrss), in bytes. Empty under a launcher template: the ranks run under
  // another node's supervisor, out of this process's sight.
  std::optional<double> peak_rss_bytes;
};

// Runs `argv` with stdout and stderr to `log_path`. With a `launcher` template (shell words,
// such as "srun -N 2 --ntasks-per-node 8") the command runs as `/bin/sh -c 'TEMPLATE ARGV...'`,
// each argument quoted for the shell. Throws ptdp::Error when the log cannot be created or the
// process cannot be started. A stop signal the caller's StopSignal receives meanwhile is sent on
// to the job, and the job is waited for.
ArmJobResult run_arm_job(const std::vector<std::string>& argv, const std::string& launcher,
                         const std::string& log_path);

// `text` as one shell word, single-quoted where needed.
std::string shell_quoted(const std::string& text);

}  // namespace ptdp
