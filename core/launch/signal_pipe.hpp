#pragma once
// The launcher's signals as bytes on a pipe: a handler may only write(), and the supervision loop
// polls the pipe beside the ranks' output. One at a time per process.
#include <signal.h>

#include <array>
#include <vector>

#include "launch/socket_io.hpp"

namespace ptdp {

// Catches SIGINT, SIGTERM, SIGUSR1 and SIGCHLD while it lives, and puts the previous handlers back
// when it goes.
class SignalPipe {
 public:
  SignalPipe();
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  int fd() const { return read_.get(); }  // readable when a signal came
  std::vector<int> take();                // the signals that came, in order

  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGUSR1, SIGCHLD};

 private:
  net::FileDescriptor read_, write_;
  std::array<struct sigaction, 4> previous_{};
};

}  // namespace ptdp
