#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "check_runner.hpp"
#include "device_memory.hpp"
#include "ptdp/error.hpp"
#include "scenarios.hpp"

using ptdp::DType;
using ptdp::ReduceOp;

ptdp::CommInit comm_init(const RankSetup& setup, const std::string& prefix, double timeout_s) {
  ptdp::CommInit init;
  init.device = ptdp::Device{ptdp::MemoryKind::Cuda, setup.device};
  init.rank = setup.rank;
  init.size = setup.size;
  init.store = setup.store;
  init.key_prefix = prefix;
  init.timeout_s = timeout_s;
  return init;
}

double value_at(int rank, int64_t i) { return static_cast<double>((i * 7 + rank * 3) % 11) - 5.0; }

std::vector<double> values_of(int rank, int64_t count) {
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = value_at(rank, i);
  return values;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void drain(cudaStream_t stream, double limit_s) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) TEST_CUDA(state);
    if (seconds_since(start) > limit_s)
      throw std::runtime_error("the stream is still busy after " + std::to_string(limit_s) + " s: a hang");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

namespace {

constexpr double kTimeout = 30.0;  // for the communicators that are meant to work

class WorldChecks {
 public:
  explicit WorldChecks(const RankSetup& setup) : s_(setup), runner_(setup.rank) {
    TEST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~WorldChecks() { cudaStreamDestroy(stream_); }

  int run();

 private:
  std::shared_ptr<ptdp::Communicator> make(const std::string& prefix, double timeout_s,
                                           const std::map<std::string, ConfigValue>& config = {}) {
    auto comm = s_.plugin->create(s_.rank, s_.size, config);
    comm->init(comm_init(s_, prefix, timeout_s));
    return comm;
  }
  void streams();
  void refusals();
  void failures();
  void two_rank_failures();

  const RankSetup& s_;
  CheckRunner runner_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<ptdp::Communicator> world_;
};

int WorldChecks::run() {
  runner_.run("init the world", [&] {
    world_ = s_.plugin->create(s_.rank, s_.size);
    world_->init(comm_init(s_, "world", kTimeout));
    expect(world_->rank() == s_.rank, "rank() is " + std::to_string(world_->rank()));
    expect(world_->size() == s_.size, "size() is " + std::to_string(world_->size()));
    expect(world_->name() == "world", "name() is " + world_->name());
    expect(world_->memory_kinds() == ptdp::memory_bit(ptdp::MemoryKind::Cuda), "memory_kinds() is not CUDA only");
    world_->bind_stream(stream_);
  });
  if (!world_) return runner_.failures();
  streams();
  refusals();
  failures();
  two_rank_failures();
  runner_.run("destroy the world (finalize) promptly", [&] {
    const auto start = std::chrono::steady_clock::now();
    world_.reset();
    expect(seconds_since(start) < 10, "destruction took " + std::to_string(seconds_since(start)) + " s");
  });
  return runner_.failures();
}

void WorldChecks::streams() {
  const int64_t n = 1 << 20;
  runner_.run("barrier waits for the communicator's own stream", [&] {
    auto comm = make("own-stream", kTimeout);  // no stream bound: the plugin's own
    DeviceBuffer buffer(DType::F32, n, s_.device);
    buffer.upload(values_of(s_.rank, n));
    comm->all_reduce(buffer.tensor(), ReduceOp::Sum);
    comm->barrier();
    std::vector<double> want(n, 0.0);
    for (int r = 0; r < s_.size; ++r)
      for (int64_t i = 0; i < n; ++i) want[i] += value_at(r, i);
    // cudaMemcpy does not wait for the plugin's non-blocking stream: only the barrier did.
    expect_values(buffer.download(), want, "after the barrier");
  });

  runner_.run("synchronous = true returns once the operation is done", [&] {
    auto comm = make("synchronous", kTimeout, {{"synchronous", true}});
    comm->bind_stream(stream_);
    DeviceBuffer buffer(DType::F32, n, s_.device);
    buffer.upload(values_of(s_.rank, n));
    comm->all_reduce(buffer.tensor(), ReduceOp::Max);
    std::vector<double> want = values_of(0, n);
    for (int r = 1; r < s_.size; ++r)
      for (int64_t i = 0; i < n; ++i) want[i] = std::max(want[i], value_at(r, i));
    expect_values(buffer.download(), want, "without any synchronization by the caller");
  });

}

void WorldChecks::refusals() {
  const std::string who = "comm-nccl: rank " + std::to_string(s_.rank) + " (group 'world'";
  runner_.run("refuses host memory", [&] {
    std::vector<float> host(16);
    ptdp::Tensor tensor{host.data(), DType::F32, {16}, {ptdp::MemoryKind::Host, 0}};
    expect_error([&] { world_->all_reduce(tensor, ReduceOp::Sum); }, {who, "all_reduce", "host memory"});
  });
  runner_.run("refuses dtypes NCCL does not reduce (u8)", [&] {
    DeviceBuffer buffer(DType::U8, 16, s_.device);
    expect_error([&] { world_->all_reduce(buffer.tensor(), ReduceOp::Sum); }, {who, "u8", "f32, bf16, f16, i32, i64"});
  });
  runner_.run("refuses a tensor on another device", [&] {
    DeviceBuffer buffer(DType::F32, 16, s_.device);
    ptdp::Tensor elsewhere = buffer.tensor();
    elsewhere.device.index = s_.device + 1;
    expect_error([&] { world_->broadcast(elsewhere, 0); }, {who, "is on cuda:" + std::to_string(s_.device + 1)});
  });
  runner_.run("refuses an all_gather output of the wrong size", [&] {
    DeviceBuffer input(DType::F32, 4, s_.device), output(DType::F32, 4 * s_.size + 1, s_.device);
    expect_error([&] { world_->all_gather(input.tensor(), output.tensor()); }, {who, "output must hold"});
  });
  runner_.run("refuses an overlapping all_gather that is not in place", [&] {
    DeviceBuffer buffer(DType::F32, 4 * s_.size + 1, s_.device);
    expect_error([&] { world_->all_gather(buffer.tensor().flat_slice(1, 4), buffer.tensor().flat_slice(0, 4 * s_.size)); },
                 {who, "overlaps"});
  });
  runner_.run("refuses a peer outside the group", [&] {
    DeviceBuffer buffer(DType::F32, 4, s_.device);
    expect_error([&] { world_->send(buffer.tensor(), s_.size, 0); },
                 {who, "peer " + std::to_string(s_.size) + " is outside the group"});
  });
  runner_.run("refuses a root outside the group", [&] {
    DeviceBuffer buffer(DType::F32, 4, s_.device);
    expect_error([&] { world_->broadcast(buffer.tensor(), -1); }, {who, "root -1 is outside the group"});
  });
  runner_.run("refuses group_end without group_start", [&] {
    expect_error([&] { world_->group_end(); }, {who, "no group_start"});
  });
  runner_.run("refuses a negative split color", [&] {
    expect_error([&] { world_->split(-1, 0, "nowhere"); }, {who, "color must be >= 0"});
  });
  runner_.run("refuses a second init", [&] {
    expect_error([&] { world_->init(comm_init(s_, "world-again", kTimeout)); }, {who, "called twice"});
  });
  runner_.run("refuses use before init", [&] {
    auto fresh = s_.plugin->create(s_.rank, s_.size);
    DeviceBuffer buffer(DType::F32, 4, s_.device);
    expect_error([&] { fresh->all_reduce(buffer.tensor(), ReduceOp::Sum); }, {"not initialized"});
  });
  runner_.run("still works after the refusals", [&] {
    DeviceBuffer buffer(DType::F32, 64, s_.device);
    buffer.upload(std::vector<double>(64, 2));
    world_->all_reduce(buffer.tensor(), ReduceOp::Sum);
    drain(stream_, kTimeout);
    expect_values(buffer.download(), std::vector<double>(64, 2 * s_.size), "sum of twos");
  });
}

void WorldChecks::failures() {
  const std::string me = "comm-nccl: rank " + std::to_string(s_.rank);
  runner_.run("recv from self with no send: a clear error, then refusals", [&] {
    auto doomed = make("doomed", 10.0, {{"synchronous", true}});
    doomed->bind_stream(stream_);
    DeviceBuffer buffer(DType::F32, 16, s_.device);
    const auto start = std::chrono::steady_clock::now();
    const std::string message = expect_error(
        [&] {
          doomed->group_start();
          doomed->recv(buffer.tensor(), s_.rank, 0);
          doomed->group_end();
        },
        {me, "recv (16 x f32) from rank " + std::to_string(s_.rank)});
    expect(contains(message, "invalid usage") || contains(message, "timed out after 10 s"),
           "neither NCCL's refusal nor the timeout: " + message);
    expect(seconds_since(start) < 10 + 5, "took " + std::to_string(seconds_since(start)) + " s");
    expect_error([&] { doomed->all_reduce(buffer.tensor(), ReduceOp::Sum); },
                 {me, "all_reduce", "refused: the communicator is down"});
  });

  runner_.run("abort from another thread makes later calls fail", [&] {
    auto comm = make("aborted", kTimeout);
    std::thread([&] { comm->abort("test shutdown"); }).join();
    DeviceBuffer buffer(DType::F32, 16, s_.device);
    expect_error([&] { comm->all_reduce(buffer.tensor(), ReduceOp::Sum); }, {me, "aborted: test shutdown"});
    expect_error([&] { comm->barrier(); }, {me, "barrier", "aborted: test shutdown"});
  });

  runner_.run("abort from another thread wakes a caller waiting on the GPU", [&] {
    auto comm = make("abort-while-waiting", kTimeout, {{"synchronous", true}});
    cudaStream_t blocked = nullptr;
    TEST_CUDA(cudaStreamCreateWithFlags(&blocked, cudaStreamNonBlocking));
    HostFlag flag;
    comm->bind_stream(blocked);
    DeviceBuffer buffer(DType::F32, 256, s_.device);
    spin_until_released(flag, blocked);
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      comm->abort("operator stop");
    });
    const auto start = std::chrono::steady_clock::now();
    std::string failure;
    try {
      expect_error([&] { comm->all_reduce(buffer.tensor(), ReduceOp::Sum); }, {me, "aborted: operator stop"});
      expect(seconds_since(start) < 3, "the caller woke after " + std::to_string(seconds_since(start)) + " s");
    } catch (const std::exception& e) {
      failure = e.what();
    }
    // ncclCommAbort waits for the queued all_reduce, which waits for the spinning kernel.
    flag.release();
    stopper.join();
    drain(blocked, kTimeout);
    cudaStreamDestroy(blocked);
    expect(failure.empty(), failure);
  });

  // On one GPU no NCCL kernel hangs, so work queued inside the group (after its `begin` event,
  // before its kernels) stands in for a peer that never answers.
  runner_.run("watchdog: an operation past its timeout is aborted and reported", [&] {
    auto comm = make("watched", 2.0);  // not synchronous: only the watchdog is looking
    cudaStream_t blocked = nullptr;
    TEST_CUDA(cudaStreamCreateWithFlags(&blocked, cudaStreamNonBlocking));
    HostFlag flag;
    comm->bind_stream(blocked);
    DeviceBuffer buffer(DType::F32, 256, s_.device);
    comm->group_start();
    spin_until_released(flag, blocked);
    comm->all_reduce(buffer.tensor(), ReduceOp::Sum);
    comm->group_end();
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    flag.release();
    drain(blocked, kTimeout);
    cudaStreamDestroy(blocked);
    expect_error([&] { comm->barrier(); },
                 {me, "barrier", "refused: the communicator is down",
                  "group [all_reduce (256 x f32, sum)] timed out after 2 s (a peer may have died)"});
  });

  runner_.run("init times out when a rank never arrives", [&] {
    auto lonely = s_.plugin->create(s_.rank, s_.size);
    ptdp::CommInit init = comm_init(s_, "lonely-" + std::to_string(s_.rank), 3.0);
    init.rank = 0;
    init.size = 2;  // rank 1 of this world never starts
    const auto start = std::chrono::steady_clock::now();
    expect_error([&] { lonely->init(init); }, {"init (world of 2) timed out after 3 s"});
    expect(seconds_since(start) < 3 + 5, "took " + std::to_string(seconds_since(start)) + " s");
  });

  runner_.run("init times out when rank 0 never publishes its id", [&] {
    auto waiting = s_.plugin->create(s_.rank, s_.size);
    ptdp::CommInit init = comm_init(s_, "nobody-" + std::to_string(s_.rank), 2.0);
    init.rank = 1;
    init.size = 2;
    const auto start = std::chrono::steady_clock::now();
    expect_error([&] { waiting->init(init); }, {"no NCCL unique id from rank 0", "nobody-"});
    expect(seconds_since(start) < 2 + 3, "took " + std::to_string(seconds_since(start)) + " s");
  });

  runner_.run("an operation stuck behind other work on the stream: a clear error, no abort", [&] {
    auto comm = make("blocked", 2.0, {{"synchronous", true}});
    cudaStream_t blocked = nullptr;
    TEST_CUDA(cudaStreamCreateWithFlags(&blocked, cudaStreamNonBlocking));
    HostFlag flag;
    comm->bind_stream(blocked);
    DeviceBuffer buffer(DType::F32, 256, s_.device);
    buffer.upload(std::vector<double>(256, 1));
    spin_until_released(flag, blocked);
    const auto start = std::chrono::steady_clock::now();
    std::string failure;
    try {
      expect_error([&] { comm->all_reduce(buffer.tensor(), ReduceOp::Sum); }, {me, "did not start within 2 s"});
      expect(seconds_since(start) < 2 + 3, "took " + std::to_string(seconds_since(start)) + " s");
    } catch (const std::exception& e) {
      failure = e.what();
    }
    flag.release();
    drain(blocked, kTimeout);  // the queued all_reduce runs once the stream is free
    cudaStreamDestroy(blocked);
    expect(failure.empty(), failure);
    expect_values(buffer.download(), std::vector<double>(256, s_.size), "the all_reduce that waited");
    comm->bind_stream(stream_);
    comm->all_reduce(buffer.tensor(), ReduceOp::Sum);
    expect_values(buffer.download(), std::vector<double>(256, s_.size * s_.size), "the communicator still works");
  });
}

void WorldChecks::two_rank_failures() {
  const std::string name = "a peer that never joins an all_reduce: timeout naming the operation";
  if (s_.size != 2) {
    runner_.skip(name, "needs exactly 2 ranks");
    return;
  }
  runner_.run(name, [&] {
    auto comm = make("skipped", 3.0, {{"synchronous", true}});
    comm->bind_stream(stream_);
    DeviceBuffer buffer(DType::F32, 1 << 16, s_.device);
    if (s_.rank == 0) {
      const auto start = std::chrono::steady_clock::now();
      expect_error([&] { comm->all_reduce(buffer.tensor(), ReduceOp::Sum); },
                   {"comm-nccl: rank 0 (group 'world', rank 0 of 2)", "all_reduce (65536 x f32, sum) timed out after 3 s",
                    "a peer may have died"});
      expect(seconds_since(start) < 3 + 4, "took " + std::to_string(seconds_since(start)) + " s");
      s_.store->set("skipped/rank0-done", {1});
    } else {
      // Rank 1 stays away until rank 0 has given up, then leaves cleanly and promptly.
      s_.store->get("skipped/rank0-done", std::chrono::milliseconds(60000));
      const auto start = std::chrono::steady_clock::now();
      comm.reset();
      expect(seconds_since(start) < 3 + 2, "destruction took " + std::to_string(seconds_since(start)) + " s");
    }
  });
}

}  // namespace

int run_world_checks(const RankSetup& setup) { return WorldChecks(setup).run(); }
