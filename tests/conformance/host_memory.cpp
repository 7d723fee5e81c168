// Host memory for the suite, and the choice of memory for a communicator.
#include <algorithm>
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
  void fill_later(void* dst, float value, size_t count, int) override {
    std::fill_n(static_cast<float*>(dst), count, value);
  }
};

}  // namespace

std::unique_ptr<TestMemory> memory_for(MemoryKind kind, int local_rank) {
  if (kind == MemoryKind::Host) return std::make_unique<HostMemory>();
#ifdef PTDP_CONFORMANCE_CUDA
  return make_cuda_memory(local_rank);
#else
  (void)local_rank;
  throw std::runtime_error("this build of the conformance suite has no CUDA memory (built without CUDA)");
#endif
}

}  // namespace ptdp::conformance
