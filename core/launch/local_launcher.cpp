#include "launch/local_launcher.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>

#include "launch/rank_process.hpp"
#include "launch/rendezvous_secret.hpp"
#include "launch/signal_pipe.hpp"
#include "launch/socket_io.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

using net::Clock;

// Output of ranks that have all exited is still drained for this long (a grandchild may hold
// the pipe open).
constexpr std::chrono::milliseconds kDrainLimit{1000};

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

// One local job: its ranks, their output, and what the launcher decided about them.
class LocalJob {
 public:
  explicit LocalJob(const LaunchOptions& options)
      : options_(options),
        report_(options.report ? options.report
                               : [](const std::string& line) { std::cerr << "launch: " << line << std::endl; }) {}

  // Starts the ranks in order; the first that cannot start fails the job and stops the others.
  void spawn(const RankCommand& command) {
    for (int rank = 0; rank < command.nproc; ++rank) {
      try {
        RankProcess process = start_rank(rank, command);
        children_.push_back({command.first_rank + rank, process.pid, true});
        for (ForwardedOutput& o : process.output) output_.push_back(std::move(o));
      } catch (const Error& e) {
        report_(e.what());
        result_ = 1;
        begin_stop(SIGTERM);
        return;
      }
    }
  }

  // Until every rank has exited and its output is drained: reaps, forwards output, acts on the
  // launcher's signals and kills what outlives the grace period. Returns the job's status.
  int supervise() {
    std::optional<Clock::time_point> drain_until;
    for (;;) {
      reap();
      if (!any_running()) {
        if (!drain_until) drain_until = Clock::now() + kDrainLimit;
        if (output_.empty() || Clock::now() >= *drain_until) break;
      }
      if (kill_at_ && !killed_ && Clock::now() >= *kill_at_) {
        stop_all(SIGKILL);
        killed_ = true;
      }
      std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
      for (const ForwardedOutput& o : output_) fds.push_back({o.pipe.get(), POLLIN, 0});
      int wait_ms = -1;
      auto until = [&](Clock::time_point t) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count() + 1;
        wait_ms = static_cast<int>(std::max<int64_t>(0, wait_ms < 0 ? ms : std::min<int64_t>(wait_ms, ms)));
      };
      if (kill_at_ && !killed_) until(*kill_at_);
      if (drain_until) until(*drain_until);
      // A failed poll (EINTR) only means another turn of the loop.
      ::poll(fds.data(), fds.size(), wait_ms);
      for (int sig : signals_.take()) on_signal(sig);
      forward_output(fds);
    }
    if (!result_ && stopped_by_signal_) return options_.stopped_by_signal_code;
    return result_.value_or(0);
  }

 private:
  void stop_all(int sig) {
    for (Child& c : children_) {
      if (!c.running) continue;
      ::kill(c.pid, sig);
      ::kill(c.pid, SIGCONT);  // a stopped rank acts on the signal only once it runs again
    }
  }

  void begin_stop(int sig) {
    stop_all(sig);
    if (!kill_at_) kill_at_ = Clock::now() + options_.grace;
  }

  bool any_running() const {
    for (const Child& c : children_)
      if (c.running) return true;
    return false;
  }

  void reap() {
    for (Child& c : children_) {
      if (!c.running) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.running = false;
      const bool stopped_cleanly = options_.stopped_by_signal_code != 0 && WIFEXITED(status) &&
                                   WEXITSTATUS(status) == options_.stopped_by_signal_code;
      if (stopped_cleanly) {
        stopped_by_signal_ = true;
        continue;
      }
      if (status != 0 && !result_) {
        result_ = exit_code_of(status);
        int others = 0;
        for (const Child& o : children_) others += o.running;
        // A stopped rank does not exit; the ranks waiting for it do, and would take the blame.
        for (const Child& o : children_)
          if (o.running && is_stopped(o.pid))
            report_("rank " + std::to_string(o.rank) + " (pid " + std::to_string(o.pid) +
                    ") is stopped (SIGSTOP or a debugger): the other ranks probably timed out waiting for it");
        report_(describe_status(c.rank, status) +
                (others ? "; stopping the other " + std::to_string(others) + " rank(s)" : ""));
        begin_stop(SIGTERM);
      }
    }
  }

  void on_signal(int sig) {
    if (sig == SIGCHLD) return;  // reaped at the top of the loop
    if (options_.stopped_by_signal_code != 0 && !result_ && !stop_forwarded_at_) {
      report_("signal " + std::to_string(sig) + " (" + ::strsignal(sig) +
              "): the ranks finish their step, save a checkpoint and stop; a second signal stops them at once");
      stop_forwarded_at_ = Clock::now();
      stop_all(sig);
      return;
    }
    // The same keypress or scancel also reaches the launcher twice at times; a second asks again.
    if (stop_forwarded_at_ && !result_ && Clock::now() - *stop_forwarded_at_ < std::chrono::seconds(1)) return;
    if (stop_forwarded_at_ && !result_) {
      report_("second signal " + std::to_string(sig) + " (" + ::strsignal(sig) + "): stopping the ranks now");
      result_ = 128 + sig;
      stop_all(SIGKILL);
      killed_ = true;
      return;
    }
    if (!result_) {
      report_("interrupted by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + "); stopping the ranks");
      result_ = 128 + sig;
    }
    begin_stop(sig);
  }

  // `fds` is the poll set: the signal pipe, then output_ in order.
  void forward_output(const std::vector<pollfd>& fds) {
    for (size_t i = output_.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      if (!output_[i].pump()) output_.erase(output_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  const LaunchOptions& options_;
  const std::function<void(const std::string&)> report_;
  SignalPipe signals_;
  std::vector<Child> children_;
  std::vector<ForwardedOutput> output_;
  std::optional<int> result_;  // set by the first failure or interruption
  std::optional<Clock::time_point> kill_at_;
  bool killed_ = false;
  std::optional<Clock::time_point> stop_forwarded_at_;  // a stop signal went to the ranks
  bool stopped_by_signal_ = false;                      // a rank exited with stopped_by_signal_code
};

}  // namespace

int launch_local_ranks(int nproc, const std::vector<std::string>& argv, const LaunchOptions& options) {
  if (nproc < 1) throw Error("launch: nproc " + std::to_string(nproc) + " < 1");
  if (argv.empty()) throw Error("launch: no command to run");
  if (options.nnodes < 1 || options.node_rank < 0 || options.node_rank >= options.nnodes)
    throw Error("launch: node rank " + std::to_string(options.node_rank) + " outside nnodes " +
                std::to_string(options.nnodes));
  const bool several_nodes = options.nnodes > 1;
  if (several_nodes && options.master_port <= 0)
    throw Error("launch: a job over " + std::to_string(options.nnodes) +
                " nodes needs a fixed launch.master_port, the same on every node");
  if (several_nodes && !rendezvous_secret())
    throw Error(std::string("launch: a job over ") + std::to_string(options.nnodes) +
                " nodes needs the job's secret on every node: set " + kRendezvousSecretFileVariable +
                " (a file only you can read) or " + kRendezvousSecretVariable + " (docs/reliability.md)");
  RankCommand command;
  command.argv = argv;
  command.nproc = nproc;
  command.first_rank = options.node_rank * nproc;
  command.world_size = options.nnodes * nproc;
  command.master_addr = options.master_addr;
  command.master_port = options.master_port > 0 ? options.master_port : net::pick_free_port();
  // The job's rendezvous secret, unless one was given: then every rank already has it.
  command.secret = rendezvous_secret() ? std::string() : new_rendezvous_secret();
  command.env = options.env;
  LocalJob job(options);
  job.spawn(command);
  return job.supervise();
}

}  // namespace ptdp
