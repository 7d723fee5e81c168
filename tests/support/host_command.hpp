#pragma once
// Runs this build's ptdp-host as a user would, for the tests of its subcommands.
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace ptdp::test {

struct HostResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

// `host` is the binary (PTDP_TEST_HOST), `args` the rest of the command line, shell-quoted.
// `shell_line`, when given, is run instead (by the shell), its output taken the same way.
inline HostResult run_host_command(const std::string& host, const std::string& args,
                                   const std::string& shell_line = "") {
  const std::string command = (shell_line.empty() ? quoted(host) + " " + args : "(" + shell_line + ")") + " 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The same under a limit on the process's memory (its address space, as `ulimit -v`) and on its
// time (`timeout`: exit 124 when it ran out), for commands whose work must stay bounded.
inline HostResult run_host_command_bounded(const std::string& host, const std::string& args, long memory_mib,
                                           int seconds) {
  const std::string command = "ulimit -v " + std::to_string(memory_mib * 1024) + " && exec timeout " +
                              std::to_string(seconds) + " " + quoted(host) + " " + args;
  return run_host_command("", "", command);
}

}  // namespace ptdp::test
