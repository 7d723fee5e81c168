#pragma once
// A tensor-parallel group of thread ranks for any LayerKernels backend: each collective copies
// the buffer out through the rank's own kernels (copy_to_host waits for the work queued before
// it), sums it in fp32 with the other ranks on the host (support/thread_group, rank order, so
// every rank gets the same bits), and copies the result back. Slow and simple: it exists to
// check the layers' tensor-parallel arithmetic without a network, whatever memory they use.
#include <memory>
#include <string>
#include <vector>

#include <ptdp/communicator.hpp>
#include <ptdp/layer_kernels.hpp>

#include "support/thread_group.hpp"

namespace ptdp::conformance {

class StagingCommunicator final : public Communicator {
 public:
  // `group` outlives this; kernels() must be set before the layers run.
  StagingCommunicator(test::ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  void set_kernels(LayerKernels* kernels) { kernels_ = kernels; }

  void init(const CommInit&) override {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  std::string name() const override { return "staging threads"; }
  uint32_t memory_kinds() const override { return memory_bit(MemoryKind::Host) | memory_bit(MemoryKind::Cuda); }
  uint32_t capabilities() const override { return 0; }
  std::shared_ptr<Communicator> split(int, int, const std::string&) override { unused("split"); }
  void bind_stream(void*) override {}
  void all_reduce(Tensor buffer, ReduceOp op) override;
  // Sequence parallelism's regions (ptdp/tensor_parallel_regions.hpp), staged the same way.
  void reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override;
  void all_gather(const Tensor& input, Tensor output) override;
  void broadcast(Tensor, int) override { unused("broadcast"); }
  void group_start() override {}
  void group_end() override {}
  void send(const Tensor&, int, int) override { unused("send"); }
  void recv(Tensor, int, int) override { unused("recv"); }
  void barrier() override { unused("barrier"); }
  void abort(const std::string& reason) override { group_.abort(reason); }

 private:
  // The layers of LayerKernels only reduce and gather over their tensor group.
  [[noreturn]] static void unused(const char* what);
  // The buffer's values, read through the rank's kernels, for `what`.
  std::vector<float> staged(const Tensor& buffer, const char* what) const;

  test::ThreadGroup& group_;
  int rank_;
  LayerKernels* kernels_ = nullptr;
};

}  // namespace ptdp::conformance
