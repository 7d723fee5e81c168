#include "launch/signal_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

int g_signal_pipe = -1;

void on_signal(int signo) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(signo);
  ssize_t ignored = ::write(g_signal_pipe, &byte, 1);
  (void)ignored;
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe() {
  if (g_signal_pipe >= 0) throw Error("launch: launch_local_ranks is already running in this process");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(std::string("launch: pipe(): ") + std::strerror(errno));
  read_ = net::FileDescriptor(fds[0]);
  write_ = net::FileDescriptor(fds[1]);
  g_signal_pipe = write_.get();
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &previous_[i]);
}

SignalPipe::~SignalPipe() {
  for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
  g_signal_pipe = -1;
}

std::vector<int> SignalPipe::take() {
  std::vector<int> signals;
  unsigned char buffer[64];
  ssize_t n;
  while ((n = ::read(read_.get(), buffer, sizeof(buffer))) > 0) signals.insert(signals.end(), buffer, buffer + n);
  return signals;
}

}  // namespace ptdp
