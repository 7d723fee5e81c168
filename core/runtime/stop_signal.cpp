#include "runtime/stop_signal.hpp"

#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "ptdp/error.hpp"

namespace ptdp {
namespace {

constexpr int kStopSignals[3] = {SIGTERM, SIGUSR1, SIGINT};

volatile std::sig_atomic_t g_received = 0;
volatile std::sig_atomic_t g_installed = 0;
timespec g_first_at{};

double seconds_between(const timespec& a, const timespec& b) {
  return static_cast<double>(b.tv_sec - a.tv_sec) + 1e-9 * static_cast<double>(b.tv_nsec - a.tv_nsec);
}

// Only async-signal-safe calls.
void on_stop_signal(int signo) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  if (g_received == 0) {
    g_received = signo;
    g_first_at = now;
    return;
  }
  if (seconds_between(g_first_at, now) < 1.0) return;
  static const char message[] = "second stop signal: exiting now, without a checkpoint\n";
  ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  ::_exit(128 + signo);
}

}  // namespace

StopSignal::StopSignal() {
  if (g_installed) throw Error("StopSignal: already installed in this process");
  g_installed = 1;
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &action, &previous_[i]);
}

StopSignal::~StopSignal() {
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &previous_[i], nullptr);
  g_installed = 0;
}

int StopSignal::received() { return g_received; }

std::string signal_name(int signo) {
  const char* abbreviation = ::sigabbrev_np(signo);  // "TERM"; null for a number that is no signal
  return "signal " + std::to_string(signo) + (abbreviation ? std::string(" (SIG") + abbreviation + ")" : "");
}

}  // namespace ptdp
