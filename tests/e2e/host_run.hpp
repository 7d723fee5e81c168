#pragma once
// Runs `ptdp-host run` on a small GPT in a temporary folder and reads back what it reported.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ptdp::test {

struct HostRun {
  int exit_code = -1;
  std::string output;          // stdout and stderr together
  std::vector<double> losses;  // per step, from --metrics
  std::vector<double> lrs;     // the learning rate of each step, from --metrics
  // precision.params = "fp16" only: each step's loss scale and whether it was skipped.
  std::vector<double> loss_scales;
  std::vector<bool> skipped;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `sets` followed by `more`: a layout's or a recipe's --set overrides with a test's own.
inline std::vector<std::string> with(std::vector<std::string> sets, const std::vector<std::string>& more) {
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

// Lines of a command's output: a refusal is one.
inline size_t lines_of(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// Runs a shell command line and waits for it.
CommandResult run_shell(const std::string& command_line);

// What a finished `ptdp-host run` reported: its exit code and output, and the steps of its --metrics file.
HostRun host_run_result(const CommandResult& ran, const std::string& metrics_path);

// A folder holding a byte-level text corpus and a manifest of a tiny GPT trained on it.
class TinyGptWorkspace {
 public:
  TinyGptWorkspace();
  ~TinyGptWorkspace();
  const std::string& dir() const { return dir_; }
  const std::string& manifest() const { return manifest_; }
  HostRun run(const std::vector<std::string>& sets, int nproc, const std::string& extra_args = "") const;

 private:
  std::string dir_, manifest_;
};

// `ptdp-host run` started in the background, for tests that act on a job while it runs. Its
// stdout and stderr go to a file in the workspace.
class BackgroundRun {
 public:
  BackgroundRun(const TinyGptWorkspace& ws, const std::vector<std::string>& sets, int nproc,
                const std::string& metrics_path);
  ~BackgroundRun();  // kills the job if it still runs
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;

  pid_t pid() const { return pid_; }
  // Waits until `metrics_path` holds `steps` steps; false if the job ended or `limit` passed first.
  bool wait_for_steps(int steps, std::chrono::seconds limit) const;
  // The exit code as HostRun::exit_code gives it, or nullopt when the job still ran after `limit`.
  std::optional<int> wait(std::chrono::seconds limit);
  std::string output() const;

 private:
  std::string metrics_path_, log_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// `ptdp-host ARGS` (any subcommand), through run_shell.
CommandResult run_host_command(const std::string& args);

// Step lines of a metrics log, its header record not counted (0 when it does not exist).
int count_steps(const std::string& metrics_path);

// The names of the entries of a folder, sorted (a ckpt-fs folder: "step-00000002", ...).
std::vector<std::string> folder_names(const std::string& dir);

}  // namespace ptdp::test
