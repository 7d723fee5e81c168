// Host memory for the suite, and the choice of memory for a communicator.
#include <cstdlib>
#include <stdexcept>

#include "test_memory.hpp"

namespace ptdp::conformance {

#ifdef PTDP_CONFORMANCE_CUDA
std::unique_ptr<TestMemory> make_cuda_memory(int local_rank);
#endif

namespace {

class HostMemory final : public TestMemory {
 public:
  Device device() const override { return Device{MemoryKind::Host, 0}; }
  std::shared_ptr<void> allocate(size_t bytes) override {
    return std::shared_ptr<void>(std::calloc(bytes, 1), std::free);
  }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void* stream() override { return nullptr; }
  void synchronize() override {}
};

}  // namespace

std::unique_ptr<TestMemory> memory_for(uint32_t memory_kinds, int local_rank) {
  if (memory_kinds & memory_bit(MemoryKind::Host)) return std::make_unique<HostMemory>();
#ifdef PTDP_CONFORMANCE_CUDA
  if (memory_kinds & memory_bit(MemoryKind::Cuda)) return make_cuda_memory(local_rank);
#endif
  (void)local_rank;
  throw std::runtime_error("the communicator moves no memory this test build can allocate (memory kinds " +
                           std::to_string(memory_kinds) + ")");
}

}  // namespace ptdp::conformance
