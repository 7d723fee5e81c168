#include "launch/rank_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launch/rendezvous_secret.hpp"
#include "ptdp/error.hpp"

extern char** environ;

namespace ptdp {

namespace {

int job_rank(int local_rank, const RankCommand& command) { return command.first_rank + local_rank; }

// The environment of the node's rank `local_rank`: ours without any PTDP_* launch variables, then
// the rank's, and the job's rendezvous secret when the launcher made one.
std::vector<std::string> rank_environment(int local_rank, const RankCommand& command) {
  const int world = command.world_size > 0 ? command.world_size : command.nproc;
  const std::vector<std::pair<std::string, std::string>> own = {
      {"PTDP_RANK", std::to_string(job_rank(local_rank, command))},
      {"PTDP_WORLD_SIZE", std::to_string(world)},
      {"PTDP_LOCAL_RANK", std::to_string(local_rank)},
      {"PTDP_LOCAL_WORLD_SIZE", std::to_string(command.nproc)},
      {"PTDP_MASTER_ADDR", command.master_addr},
      {"PTDP_MASTER_PORT", std::to_string(command.master_port)}};
  auto overridden = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    for (const auto& [k, v] : own)
      if (k == name) return true;
    for (const auto& [k, v] : command.env)
      if (k == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!overridden(*e)) env.emplace_back(*e);
  for (const auto& [k, v] : command.env) env.push_back(k + "=" + v);
  for (const auto& [k, v] : own) env.push_back(k + "=" + v);
  if (!command.secret.empty()) env.push_back(std::string(kRendezvousSecretVariable) + "=" + command.secret);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child side of fork(): only async-signal-safe calls until exec.
[[noreturn]] void exec_rank(pid_t launcher, char* const* argv, char* const* envp, int out, int err) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // A launcher that dies without a chance to clean up still takes its ranks along.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher) ::_exit(128 + SIGTERM);
  if (out >= 0) ::dup2(out, STDOUT_FILENO);
  if (err >= 0) ::dup2(err, STDERR_FILENO);
  ::execvpe(argv[0], argv, envp);
  const char* what = "launch: cannot execute ";
  ssize_t ignored = ::write(STDERR_FILENO, what, std::strlen(what));
  ignored = ::write(STDERR_FILENO, argv[0], std::strlen(argv[0]));
  ignored = ::write(STDERR_FILENO, ": ", 2);
  const char* reason = ::strerror(errno);
  ignored = ::write(STDERR_FILENO, reason, std::strlen(reason));
  ignored = ::write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  ::_exit(127);
}

Error cannot_start(int rank, const char* call) {
  return Error("cannot start rank " + std::to_string(rank) + ": " + call + ": " + std::strerror(errno));
}

}  // namespace

RankProcess start_rank(int local_rank, const RankCommand& command) {
  const int rank = job_rank(local_rank, command);
  std::vector<std::string> args = command.argv;
  std::vector<char*> c_args = c_strings(args);
  std::vector<std::string> env = rank_environment(local_rank, command);
  std::vector<char*> c_env = c_strings(env);
  net::FileDescriptor out_read, out_write, err_read, err_write;
  // The launcher's own output is the job's rank 0's; on the other nodes every rank is prefixed.
  if (rank > 0) {
    int o[2], e[2];
    if (::pipe2(o, O_CLOEXEC) != 0) throw cannot_start(rank, "pipe()");
    out_read = net::FileDescriptor(o[0]), out_write = net::FileDescriptor(o[1]);
    if (::pipe2(e, O_CLOEXEC) != 0) throw cannot_start(rank, "pipe()");
    err_read = net::FileDescriptor(e[0]), err_write = net::FileDescriptor(e[1]);
  }
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_rank(launcher, c_args.data(), c_env.data(), out_write.get(), err_write.get());
  if (pid < 0) throw cannot_start(rank, "fork()");
  RankProcess process;
  process.pid = pid;
  if (rank > 0) {
    const std::string prefix = "[rank " + std::to_string(rank) + "] ";
    process.output.push_back({std::move(out_read), STDOUT_FILENO, prefix, {}});
    process.output.push_back({std::move(err_read), STDERR_FILENO, prefix, {}});
  }
  return process;
}

}  // namespace ptdp
