#include "ab/arm_job.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "ptdp/error.hpp"
#include "runtime/stop_signal.hpp"

namespace ptdp {

std::string shell_quoted(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_-+=./:,@%") == std::string::npos;
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

ArmJobResult run_arm_job(const std::vector<std::string>& argv, const std::string& launcher,
                         const std::string& log_path) {
  std::vector<std::string> command = argv;
  if (!launcher.empty()) {
    std::string line = launcher;
    for (const auto& arg : argv) line.append(" ").append(shell_quoted(arg));
    command = {"/bin/sh", "-c", line};
  }
  std::vector<char*> c_argv;
  for (auto& arg : command) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);

  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) throw Error(log_path + ": cannot create the job's log: " + std::strerror(errno));
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // An A/B stopped without a chance to clean up takes its running job along.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execv(c_argv[0], c_argv.data());
    const std::string reason = std::string("cannot execute ") + c_argv[0] + ": " + std::strerror(errno) + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, reason.data(), reason.size());
    (void)ignored;
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(log);
  if (pid < 0) throw Error(std::string("cannot start a job: fork(): ") + std::strerror(fork_errno));
  int status = 0;
  struct rusage usage {};
  // Polled rather than blocked on, so that a stop signal the A/B receives (StopSignal) is passed
  // on to the job, which then finishes its step and stops as a run does.
  bool forwarded = false;
  for (;;) {
    const pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (const int sig = StopSignal::received(); sig != 0 && !forwarded) {
      ::kill(pid, sig);
      forwarded = true;
    }
    const timespec pause{0, 20'000'000};
    ::nanosleep(&pause, nullptr);
  }
  ArmJobResult result;
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  if (launcher.empty()) result.peak_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;  // KiB on Linux
  return result;
}

}  // namespace ptdp
