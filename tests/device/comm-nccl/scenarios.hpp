#pragma once
// The two scenarios one rank runs. Each returns its number of failed checks.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "comm_plugin.hpp"
#include "file_rendezvous.hpp"

struct RankSetup {
  int rank = 0;
  int size = 1;
  int device = 0;
  FileRendezvous* store = nullptr;
  const CommPlugin* plugin = nullptr;
};

// What is particular to comm-nccl (its lifecycle, the watchdog, synchronous mode, NCCL's own
// refusals and failure paths); the Communicator conformance suite checks the common contract.
int run_world_checks(const RankSetup& setup);
// Two ranks exchange like neighbouring pipeline stages; rank 1 dies in the middle of a step and
// rank 0 must stop with a clear error naming it within the watchdog's timeout.
int run_peer_death_checks(const RankSetup& setup);

// Helpers shared by both.
ptdp::CommInit comm_init(const RankSetup& setup, const std::string& prefix, double timeout_s);
// The value rank `rank` holds at element `i`: small integers, exact in every dtype.
double value_at(int rank, int64_t i);
std::vector<double> values_of(int rank, int64_t count);
// Waits for the stream with a limit, so that a hang shows as a failure.
void drain(cudaStream_t stream, double limit_s);
double seconds_since(std::chrono::steady_clock::time_point start);
