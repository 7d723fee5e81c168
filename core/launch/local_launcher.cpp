#include "launch/local_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>

#include "launch/rendezvous_secret.hpp"
#include "launch/socket_io.hpp"
#include "ptdp/error.hpp"

extern char** environ;

namespace ptdp {

namespace {

using net::Clock;
using net::FileDescriptor;

// Output of ranks that have all exited is still drained for this long (a grandchild may hold
// the pipe open).
constexpr std::chrono::milliseconds kDrainLimit{1000};

int g_signal_pipe = -1;

void on_signal(int signo) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(signo);
  ssize_t ignored = ::write(g_signal_pipe, &byte, 1);
  (void)ignored;
  errno = saved;
}

// Turns SIGINT, SIGTERM, SIGUSR1 and SIGCHLD into bytes on a pipe the supervision loop polls, and puts
// the previous handlers back afterwards.
class SignalPipe {
 public:
  SignalPipe() {
    if (g_signal_pipe >= 0) throw Error("launch: launch_local_ranks is already running in this process");
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      throw Error(std::string("launch: pipe(): ") + std::strerror(errno));
    read_ = FileDescriptor(fds[0]);
    write_ = FileDescriptor(fds[1]);
    g_signal_pipe = write_.get();
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~SignalPipe() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
    g_signal_pipe = -1;
  }
  int fd() const { return read_.get(); }
  std::vector<int> take() {
    std::vector<int> signals;
    unsigned char buffer[64];
    ssize_t n;
    while ((n = ::read(read_.get(), buffer, sizeof(buffer))) > 0) signals.insert(signals.end(), buffer, buffer + n);
    return signals;
  }

  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGUSR1, SIGCHLD};

 private:
  FileDescriptor read_, write_;
  std::array<struct sigaction, 4> previous_{};
};

void write_fully(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // our own output is gone; nothing sensible to do
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// One output stream of one rank, forwarded line by line with the rank as prefix.
struct ForwardedStream {
  FileDescriptor pipe;
  int target = 1;
  std::string prefix;
  std::string partial;

  // Reads what is there; false at end of stream.
  bool pump() {
    char buffer[4096];
    ssize_t n = ::read(pipe.get(), buffer, sizeof(buffer));
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) {
      if (!partial.empty()) write_fully(target, prefix + partial + "\n");
      partial.clear();
      return false;
    }
    partial.append(buffer, static_cast<size_t>(n));
    size_t start = 0, newline;
    std::string lines;
    while ((newline = partial.find('\n', start)) != std::string::npos) {
      lines += prefix;
      lines.append(partial, start, newline + 1 - start);
      start = newline + 1;
    }
    partial.erase(0, start);
    if (!lines.empty()) write_fully(target, lines);
    return true;
  }
};

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
};

std::string describe_status(int rank, int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "rank " + std::to_string(rank) + " killed by signal " + std::to_string(sig) + " (" +
           ::strsignal(sig) + ")";
  }
  return "rank " + std::to_string(rank) + " exited with status " + std::to_string(WEXITSTATUS(status));
}

// Whether `pid` is stopped (SIGSTOP, SIGTSTP, a debugger): state T or t in /proc/<pid>/stat.
bool is_stopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');  // the command name in parentheses may hold anything
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  return line[close + 2] == 'T' || line[close + 2] == 't';
}

int exit_code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

// The environment of rank `rank`: ours without any PTDP_* launch variables, then the rank's,
// and the job's rendezvous secret when the launcher made one.
std::vector<std::string> rank_environment(int rank, int nproc, const std::string& addr, int port,
                                          const std::string& secret, const LaunchOptions& options) {
  const std::vector<std::pair<std::string, std::string>> own = {
      {"PTDP_RANK", std::to_string(rank)},       {"PTDP_WORLD_SIZE", std::to_string(nproc)},
      {"PTDP_LOCAL_RANK", std::to_string(rank)}, {"PTDP_LOCAL_WORLD_SIZE", std::to_string(nproc)},
      {"PTDP_MASTER_ADDR", addr},                {"PTDP_MASTER_PORT", std::to_string(port)}};
  auto overridden = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    for (const auto& [k, v] : own)
      if (k == name) return true;
    for (const auto& [k, v] : options.env)
      if (k == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!overridden(*e)) env.emplace_back(*e);
  for (const auto& [k, v] : options.env) env.push_back(k + "=" + v);
  for (const auto& [k, v] : own) env.push_back(k + "=" + v);
  if (!secret.empty()) env.push_back(std::string(kRendezvousSecretVariable) + "=" + secret);
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

}  // namespace

int launch_local_ranks(int nproc, const std::vector<std::string>& argv, const LaunchOptions& options) {
  if (nproc < 1) throw Error("launch: nproc " + std::to_string(nproc) + " < 1");
  if (argv.empty()) throw Error("launch: no command to run");
  const auto report = options.report ? options.report
                                     : [](const std::string& line) { std::cerr << "launch: " << line << std::endl; };
  const int port = options.master_port > 0 ? options.master_port : net::pick_free_port();
  // The job's rendezvous secret, unless one was given: then every rank already has it.
  const std::string secret = rendezvous_secret() ? std::string() : new_rendezvous_secret();

  std::vector<std::string> args = argv;
  std::vector<char*> c_args = c_strings(args);
  SignalPipe signals;
  std::vector<Child> children;
  std::vector<ForwardedStream> streams;
  const pid_t self = ::getpid();

  std::optional<int> result;          // set by the first failure or interruption
  std::optional<Clock::time_point> kill_at;
  bool killed = false;
  std::optional<Clock::time_point> stop_forwarded_at;  // a stop signal went to the ranks
  bool stopped_by_signal = false;                      // a rank exited with stopped_by_signal_code
  auto stop_all = [&](int sig) {
    for (Child& c : children) {
      if (!c.running) continue;
      ::kill(c.pid, sig);
      ::kill(c.pid, SIGCONT);  // a stopped rank acts on the signal only once it runs again
    }
  };
  auto begin_stop = [&](int sig) {
    stop_all(sig);
    if (!kill_at) kill_at = Clock::now() + options.grace;
  };

  auto cannot_start = [&](int rank, const char* call) {
    report("cannot start rank " + std::to_string(rank) + ": " + call + ": " + std::strerror(errno));
    result = 1;
    begin_stop(SIGTERM);
  };

  for (int rank = 0; rank < nproc && !result; ++rank) {
    std::vector<std::string> env = rank_environment(rank, nproc, options.master_addr, port, secret, options);
    std::vector<char*> c_env = c_strings(env);
    FileDescriptor out_read, out_write, err_read, err_write;
    if (rank > 0) {
      int o[2], e[2];
      if (::pipe2(o, O_CLOEXEC) != 0) {
        cannot_start(rank, "pipe()");
        break;
      }
      if (::pipe2(e, O_CLOEXEC) != 0) {
        ::close(o[0]), ::close(o[1]);
        cannot_start(rank, "pipe()");
        break;
      }
      out_read = FileDescriptor(o[0]), out_write = FileDescriptor(o[1]);
      err_read = FileDescriptor(e[0]), err_write = FileDescriptor(e[1]);
    }
    const pid_t pid = ::fork();
    if (pid == 0) exec_rank(self, c_args.data(), c_env.data(), out_write.get(), err_write.get());
    if (pid < 0) {
      cannot_start(rank, "fork()");
      break;
    }
    children.push_back({rank, pid, true});
    if (rank > 0) {
      const std::string prefix = "[rank " + std::to_string(rank) + "] ";
      streams.push_back({std::move(out_read), STDOUT_FILENO, prefix, {}});
      streams.push_back({std::move(err_read), STDERR_FILENO, prefix, {}});
    }
  }

  auto reap = [&] {
    for (Child& c : children) {
      if (!c.running) continue;
      int status = 0;
      pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r != c.pid) continue;
      c.running = false;
      const bool stopped_cleanly = options.stopped_by_signal_code != 0 && WIFEXITED(status) &&
                                   WEXITSTATUS(status) == options.stopped_by_signal_code;
      if (stopped_cleanly) {
        stopped_by_signal = true;
        continue;
      }
      if (status != 0 && !result) {
        result = exit_code_of(status);
        int others = 0;
        for (const Child& o : children) others += o.running;
        // A stopped rank does not exit; the ranks waiting for it do, and would take the blame.
        for (const Child& o : children)
          if (o.running && is_stopped(o.pid))
            report("rank " + std::to_string(o.rank) + " (pid " + std::to_string(o.pid) +
                   ") is stopped (SIGSTOP or a debugger): the other ranks probably timed out waiting for it");
        report(describe_status(c.rank, status) +
               (others ? "; stopping the other " + std::to_string(others) + " rank(s)" : ""));
        begin_stop(SIGTERM);
      }
    }
  };
  auto any_running = [&] {
    for (const Child& c : children)
      if (c.running) return true;
    return false;
  };

  std::optional<Clock::time_point> drain_until;
  for (;;) {
    reap();
    if (!any_running()) {
      if (!drain_until) drain_until = Clock::now() + kDrainLimit;
      if (streams.empty() || Clock::now() >= *drain_until) break;
    }
    if (kill_at && !killed && Clock::now() >= *kill_at) {
      stop_all(SIGKILL);
      killed = true;
    }

    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (const ForwardedStream& s : streams) fds.push_back({s.pipe.get(), POLLIN, 0});
    int wait_ms = -1;
    auto until = [&](Clock::time_point t) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count() + 1;
      wait_ms = static_cast<int>(std::max<int64_t>(0, wait_ms < 0 ? ms : std::min<int64_t>(wait_ms, ms)));
    };
    if (kill_at && !killed) until(*kill_at);
    if (drain_until) until(*drain_until);
    // A failed poll (EINTR) only means another turn of the loop.
    ::poll(fds.data(), fds.size(), wait_ms);

    for (int sig : signals.take()) {
      if (sig == SIGCHLD) continue;  // reaped at the top of the loop
      if (options.stopped_by_signal_code != 0 && !result && !stop_forwarded_at) {
        report("signal " + std::to_string(sig) + " (" + ::strsignal(sig) +
               "): the ranks finish their step, save a checkpoint and stop; a second signal stops them at once");
        stop_forwarded_at = Clock::now();
        stop_all(sig);
        continue;
      }
      // The same keypress or scancel also reaches the launcher twice at times; a second asks again.
      if (stop_forwarded_at && !result && Clock::now() - *stop_forwarded_at < std::chrono::seconds(1)) continue;
      if (stop_forwarded_at && !result) {
        report("second signal " + std::to_string(sig) + " (" + ::strsignal(sig) + "): stopping the ranks now");
        result = 128 + sig;
        stop_all(SIGKILL);
        killed = true;
        continue;
      }
      if (!result) {
        report("interrupted by signal " + std::to_string(sig) + " (" + ::strsignal(sig) +
               "); stopping the ranks");
        result = 128 + sig;
      }
      begin_stop(sig);
    }
    for (size_t i = streams.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      if (!streams[i].pump()) streams.erase(streams.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (!result && stopped_by_signal) return options.stopped_by_signal_code;
  return result.value_or(0);
}

}  // namespace ptdp
