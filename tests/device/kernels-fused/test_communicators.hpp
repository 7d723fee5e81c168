#pragma once
// A single-rank group for running LayerKernels without a network. (Groups of thread ranks, for
// the tensor-parallel checks, are the conformance suite's: tests/kernels_conformance.)
#include <cuda_runtime.h>

#include <memory>
#include <string>

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

}  // namespace ptdp::fused::test
