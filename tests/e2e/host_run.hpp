#pragma once
// Runs `ptdp-host run` on a small GPT in a temporary folder and reads back what it reported.
#include <string>
#include <vector>

namespace ptdp::test {

struct HostRun {
  int exit_code = -1;
  std::string output;          // stdout and stderr together
  std::vector<double> losses;  // per step, from --metrics
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line and waits for it.
CommandResult run_shell(const std::string& command_line);

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

}  // namespace ptdp::test
