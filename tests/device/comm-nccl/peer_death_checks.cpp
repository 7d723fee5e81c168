#include <csignal>
#include <cstdio>
#include <thread>

#include "check_runner.hpp"
#include "device_memory.hpp"
#include "ptdp/error.hpp"
#include "scenarios.hpp"

namespace {

constexpr double kWatchdogTimeout = 5.0;
constexpr int kFullSteps = 5;  // steps rank 1 completes before it dies in the next one

}  // namespace

int run_peer_death_checks(const RankSetup& s) {
  CheckRunner runner(s.rank);
  const std::string name = "a peer killed mid-step: the survivor stops with an error naming it";
  if (s.size != 2) {
    runner.skip(name, "needs exactly 2 ranks");
    return 0;
  }
  cudaStream_t stream = nullptr;
  TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Not synchronous: the watchdog thread, not a waiting caller, has to notice the dead peer.
  auto comm = s.plugin->create(s.rank, s.size, {{"timeout_s", kWatchdogTimeout}});
  comm->init(comm_init(s, "peer-death", 60.0));
  comm->bind_stream(stream);
  const int peer = 1 - s.rank;
  const int64_t n = 1 << 16;
  DeviceBuffer outgoing(ptdp::DType::F32, n, s.device);
  DeviceBuffer incoming(ptdp::DType::F32, n, s.device);
  outgoing.upload(values_of(s.rank, n));
  // One pipeline step between neighbouring stages: send and receive in one group.
  const auto exchange = [&] {
    comm->group_start();
    comm->send(outgoing.tensor(), peer, 0);
    comm->recv(incoming.tensor(), peer, 0);
    comm->group_end();
  };

  if (s.rank == 1) {
    for (int step = 0; step < kFullSteps; ++step) {
      exchange();
      drain(stream, 60.0);
    }
    // Half of the next step (its send, not its receive), then a crash with the kernel in flight.
    comm->group_start();
    comm->send(outgoing.tensor(), peer, 0);
    comm->group_end();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::printf("[rank 1] dying in the middle of step %d\n", kFullSteps);
    std::fflush(stdout);
    std::raise(SIGKILL);
  }

  runner.run(name, [&] {
    std::string message;
    auto step_start = std::chrono::steady_clock::now();
    for (int step = 0; step < 100 && message.empty(); ++step) {
      const auto attempt = std::chrono::steady_clock::now();
      try {
        exchange();
      } catch (const ptdp::Error& e) {
        message = e.what();
        break;
      }
      step_start = attempt;
      // Either the step completes, or the watchdog aborts the communicator and the stream drains.
      drain(stream, kWatchdogTimeout + 20);
      if (step < kFullSteps) expect_values(incoming.download(), values_of(peer, n), "step " + std::to_string(step));
    }
    const double waited = seconds_since(step_start);
    expect(!message.empty(), "no error after 100 steps with a dead peer");
    std::printf("      error as expected after %.1f s: %s\n", waited, message.c_str());
    expect(contains(message, "comm-nccl: rank 0 (group 'world'"), "the error does not name this rank: " + message);
    expect(contains(message, "to rank 1") || contains(message, "from rank 1"), "the error does not name rank 1: " + message);
    expect(contains(message, "timed out after 5 s") || contains(message, "NCCL error"),
           "neither a timeout nor an NCCL error: " + message);
    expect(waited < kWatchdogTimeout + 5, "the error came " + std::to_string(waited) + " s after the stuck step began");
  });
  comm.reset();
  cudaStreamDestroy(stream);
  return runner.failures();
}
