#include "rank_processes.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>

namespace ptdp::conformance {

namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) p += n, left -= static_cast<size_t>(n);
  }
}

}  // namespace

std::vector<RankOutcome> run_ranks(int world, std::chrono::seconds limit, const std::function<void(int rank)>& body) {
  std::fflush(nullptr);  // nothing buffered may be written twice by the children
  struct Child {
    pid_t pid = -1;
    int pipe = -1;
    std::string report;
    int status = 0;
    bool reaped = false;
  };
  std::vector<Child> children(static_cast<size_t>(world));
  const auto start = Clock::now();
  for (int rank = 0; rank < world; ++rank) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe(): ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork(): ") + std::strerror(errno));
    if (pid == 0) {
      ::close(fds[0]);
      for (int r = 0; r < rank; ++r) ::close(children[static_cast<size_t>(r)].pipe);
      std::string error;
      try {
        body(rank);
      } catch (const std::exception& e) {
        error = e.what();
        if (error.empty()) error = "(exception without a message)";
      } catch (...) {
        error = "(unknown exception)";
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      write_all(fds[1], std::to_string(seconds) + "\n" + error);
      ::close(fds[1]);
      std::fflush(nullptr);
      ::_exit(error.empty() ? 0 : 1);
    }
    ::close(fds[1]);
    children[static_cast<size_t>(rank)] = {pid, fds[0], {}, 0, false};
  }

  // Collect every report until each pipe closes or the time is up.
  const auto deadline = start + limit;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < children.size(); ++i)
      if (children[i].pipe >= 0) fds.push_back({children[i].pipe, POLLIN, 0}), which.push_back(i);
    if (fds.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(left)) <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Child& c = children[which[k]];
      char buffer[4096];
      ssize_t n = ::read(c.pipe, buffer, sizeof(buffer));
      if (n > 0) {
        c.report.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        // Reap at once, as a launcher does: a zombie still looks alive to peers that check
        // whether a process exists.
        ::close(c.pipe);
        c.pipe = -1;
        ::waitpid(c.pid, &c.status, 0);
        c.reaped = true;
      }
    }
  }

  std::vector<RankOutcome> outcomes;
  for (int rank = 0; rank < world; ++rank) {
    Child& c = children[static_cast<size_t>(rank)];
    RankOutcome o;
    o.rank = rank;
    o.finished = c.pipe < 0;
    if (!o.finished) {  // still running past the limit
      ::kill(c.pid, SIGKILL);
      ::close(c.pipe);
    }
    if (!c.reaped) ::waitpid(c.pid, &c.status, 0);
    const int status = c.status;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const size_t newline = c.report.find('\n');
    if (newline != std::string::npos) {
      o.seconds = std::atof(c.report.substr(0, newline).c_str());
      o.error = c.report.substr(newline + 1);
    } else if (!o.finished) {
      o.error = "did not finish within " + std::to_string(limit.count()) + " s (hang?)";
    } else {
      o.error = "exited with status " + std::to_string(o.exit_code) + " without reporting";
    }
    outcomes.push_back(o);
  }
  return outcomes;
}

std::string describe(const std::vector<RankOutcome>& outcomes) {
  std::string text;
  for (const RankOutcome& o : outcomes)
    if (!o.error.empty()) text += "rank " + std::to_string(o.rank) + ": " + o.error + "\n";
  return text;
}

}  // namespace ptdp::conformance
