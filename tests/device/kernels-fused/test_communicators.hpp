#pragma once
// Communicators for running LayerKernels without a network: a single-rank group, and a group of
// ranks that are threads of this process (each with its own kernels instance on one GPU), whose
// all-reduce waits for every rank's stream, combines the buffers on the host and writes the
// result back. Slow and simple: it exists to check the tensor-parallel math on one device.
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "ptdp/communicator.hpp"

namespace ptdp::fused::test {

class SoloCommunicator final : public Communicator {
 public:
  void init(const CommInit&) override {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "solo"; }
  uint32_t memory_kinds() const override { return memory_bit(MemoryKind::Host) | memory_bit(MemoryKind::Cuda); }
  uint32_t capabilities() const override { return 0; }
  std::shared_ptr<Communicator> split(int, int, const std::string&) override { return std::make_shared<SoloCommunicator>(); }
  void bind_stream(void* stream) override { stream_ = static_cast<cudaStream_t>(stream); }
  void all_reduce(Tensor, ReduceOp) override {}
  void reduce_scatter(const Tensor& in, Tensor out, ReduceOp) override { copy(in, out); }
  void all_gather(const Tensor& in, Tensor out) override { copy(in, out); }
  void broadcast(Tensor, int) override {}
  void group_start() override {}
  void group_end() override {}
  void send(const Tensor&, int peer, int) override { throw Error("solo communicator: no peer " + std::to_string(peer)); }
  void recv(Tensor, int peer, int) override { throw Error("solo communicator: no peer " + std::to_string(peer)); }
  void barrier() override {}
  void abort(const std::string&) override {}

 private:
  void copy(const Tensor& in, Tensor out) {
    cuda_ok(cudaMemcpyAsync(out.data, in.data, in.bytes(), cudaMemcpyDefault, stream_), "solo copy");
    cuda_ok(cudaStreamSynchronize(stream_), "solo copy");
  }
  cudaStream_t stream_ = nullptr;
};

// The shared state of a group of thread ranks.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), buffers_(size), streams_(size) {}
  int size() const { return size_; }

  void bind_stream(int rank, cudaStream_t stream) { streams_[size_t(rank)] = stream; }

  void all_reduce(int rank, Tensor buffer, ReduceOp op) {
    cuda_ok(cudaStreamSynchronize(streams_[size_t(rank)]), "thread group all_reduce");
    std::unique_lock<std::mutex> lock(mutex_);
    if (failed_) throw Error("thread group: another rank failed");
    buffers_[size_t(rank)] = buffer;
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      try {
        combine(op);
      } catch (...) {
        failed_ = true;
        changed_.notify_all();
        throw;
      }
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    if (!changed_.wait_for(lock, std::chrono::seconds(120), [&] { return generation_ != generation || failed_; }))
      throw Error("thread group: all_reduce timed out waiting for the other ranks");
    if (failed_) throw Error("thread group: another rank failed");
  }

  void fail() {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    changed_.notify_all();
  }

 private:
  static float load(const Tensor& t, std::vector<uint8_t>& bytes, size_t i) {
    if (t.dtype == DType::F32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return from_bf16(h);
  }

  void combine(ReduceOp op) {
    const Tensor& first = buffers_[0];
    const size_t n = size_t(first.numel());
    for (const Tensor& t : buffers_)
      if (t.dtype != first.dtype || size_t(t.numel()) != n) throw Error("thread group: ranks passed different buffers");
    if (first.dtype != DType::F32 && first.dtype != DType::BF16) throw Error("thread group: only f32 and bf16");
    std::vector<std::vector<uint8_t>> host(buffers_.size(), std::vector<uint8_t>(first.bytes()));
    for (size_t r = 0; r < buffers_.size(); ++r)
      cuda_ok(cudaMemcpy(host[r].data(), buffers_[r].data, first.bytes(), cudaMemcpyDeviceToHost), "gather");
    std::vector<uint8_t> result(first.bytes());
    for (size_t i = 0; i < n; ++i) {
      float acc = load(first, host[0], i);
      for (size_t r = 1; r < buffers_.size(); ++r) {
        const float v = load(first, host[r], i);
        acc = op == ReduceOp::Sum ? acc + v : op == ReduceOp::Max ? std::max(acc, v) : std::min(acc, v);
      }
      if (first.dtype == DType::F32) std::memcpy(result.data() + 4 * i, &acc, 4);
      else {
        const uint16_t h = to_bf16(acc);
        std::memcpy(result.data() + 2 * i, &h, 2);
      }
    }
    for (const Tensor& t : buffers_)
      cuda_ok(cudaMemcpy(t.data, result.data(), first.bytes(), cudaMemcpyHostToDevice), "scatter");
    // A copy from pageable memory may still be in flight when cudaMemcpy returns, and the ranks'
    // streams do not wait for the default stream.
    cuda_ok(cudaDeviceSynchronize(), "scatter");
  }

  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool failed_ = false;
  std::vector<Tensor> buffers_;
  std::vector<cudaStream_t> streams_;
};

class ThreadRankCommunicator final : public Communicator {
 public:
  ThreadRankCommunicator(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  void init(const CommInit&) override {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string name() const override { return "threads"; }
  uint32_t memory_kinds() const override { return memory_bit(MemoryKind::Cuda); }
  uint32_t capabilities() const override { return 0; }
  std::shared_ptr<Communicator> split(int, int, const std::string&) override {
    throw Error("thread group: split is not supported");
  }
  void bind_stream(void* stream) override { group_->bind_stream(rank_, static_cast<cudaStream_t>(stream)); }
  void all_reduce(Tensor buffer, ReduceOp op) override { group_->all_reduce(rank_, buffer, op); }
  void reduce_scatter(const Tensor&, Tensor, ReduceOp) override { unsupported("reduce_scatter"); }
  void all_gather(const Tensor&, Tensor) override { unsupported("all_gather"); }
  void broadcast(Tensor, int) override { unsupported("broadcast"); }
  void group_start() override {}
  void group_end() override {}
  void send(const Tensor&, int, int) override { unsupported("send"); }
  void recv(Tensor, int, int) override { unsupported("recv"); }
  void barrier() override { unsupported("barrier"); }
  void abort(const std::string&) override { group_->fail(); }

 private:
  [[noreturn]] static void unsupported(const char* what) { throw Error(std::string("thread group: ") + what + " is not supported"); }
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

}  // namespace ptdp::fused::test
