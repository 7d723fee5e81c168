// A stop signal is only noted (the run finishes its step and saves); a second one, a second or
// more later, ends the process at once; one arriving twice within a second counts once.
#include "runtime/stop_signal.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace ptdp {
namespace {

using namespace std::chrono_literals;

// Runs `body` in a child process and returns its exit status as waitpid gives it.
template <class Body>
int in_child(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(StopSignal, TheFirstSignalIsNotedAndTheProcessGoesOn) {
  const int status = in_child([] {
    const StopSignal stop;
    if (StopSignal::received() != 0) ::_exit(10);
    ::raise(SIGUSR1);
    ::raise(SIGTERM);  // the same request reaching the rank a second way
    if (StopSignal::received() != SIGUSR1) ::_exit(11);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(StopSignal, ASecondSignalLaterEndsTheProcessAtOnce) {
  const int status = in_child([] {
    const StopSignal stop;
    ::raise(SIGTERM);
    std::this_thread::sleep_for(1100ms);
    ::raise(SIGINT);
    ::_exit(12);  // not reached
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
}

TEST(StopSignal, TheHandlersAreRestoredAfterwards) {
  const int status = in_child([] {
    { const StopSignal stop; }
    ::raise(SIGTERM);  // the default action again
    ::_exit(13);
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace ptdp
