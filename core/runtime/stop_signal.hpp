#pragma once
// SIGTERM (what Slurm and Kubernetes send before they kill a job), SIGUSR1 (what a batch script
// can ask for ahead of a time limit, as with `sbatch --signal=USR1@120`) and SIGINT (Ctrl-C) ask
// a rank to stop cleanly: it finishes the step it is in, every rank agrees on that step, the run
// saves a checkpoint and exits with kExitStoppedBySignal. A second signal, a second or more
// after the first, ends the process at once with 128 + the signal: one keypress or one scancel
// often reaches a rank twice (directly and through the launcher), and that must not count as two.
#include <csignal>
#include <string>

namespace ptdp {

// EX_TEMPFAIL of sysexits.h: the job stopped early on request and a resume continues it.
inline constexpr int kExitStoppedBySignal = 75;

// "signal 15 (SIGTERM)", for messages.
std::string signal_name(int signo);

// Installs the handlers for its lifetime and puts the previous ones back afterwards. One at a
// time per process.
class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // The first stop signal received, or 0.
  static int received();

 private:
  struct sigaction previous_[3];
};

}  // namespace ptdp
