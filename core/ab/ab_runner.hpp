#pragma once
// Runs an A/B: every arm validated first, then R rounds of one job per arm in counterbalanced
// order (A B, B A, A B, ...), so that a machine that speeds up or slows down over the session
// weighs on every arm alike; the jobs' metrics logs and output stay in the output folder.
#include <string>
#include <vector>

#include "ab/ab_analysis.hpp"
#include "ab/ab_arm.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

struct AbRunOptions {
  std::string out_dir;
  std::string launcher;      // empty: each job is a local `ptdp-host run`
  std::string host_program;  // the ptdp-host binary the jobs run
  AbMethod method;
};

// An arm that failed validation: nothing has run.
struct AbArmRefused : Error {
  using Error::Error;
};

// The A/B was stopped by a signal (SIGTERM, SIGUSR1, SIGINT) while a job ran: the message says
// which job, and where the finished jobs' metrics and logs are; no report was written.
struct AbStopped : Error {
  AbStopped(int signal, const std::string& message) : Error(message), signal(signal) {}
  int signal;
};

// Arm indices, one list per round: forward in odd rounds, backward in even ones.
std::vector<std::vector<size_t>> counterbalanced_order(size_t arms, int rounds);

// Throws AbArmRefused naming the first invalid arm before any job runs, AbStopped when a stop
// signal arrives (under the caller's StopSignal), and ptdp::Error naming
// the arm and round of a job that fails (with its log's path), a log without steps or without enough of them.
AbAnalysis run_ab(const std::vector<AbArm>& arms, const AbRunOptions& options);

}  // namespace ptdp
