// BufferMemory for host buffers: plain memory, reductions on the CPU.
#include <cstring>
#include <vector>

#include "buffer_memory.hpp"
#include "ptdp/host_reduce.hpp"

namespace ptdp::comm_ucx {

namespace {

class HostMemory final : public BufferMemory {
 public:
  ucs_memory_type_t ucx_type() const override { return UCS_MEMORY_TYPE_HOST; }
  void acquire() override {}
  char* scratch(size_t bytes) override {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void reduce(void* acc, const void* in, size_t count, DType dtype, ReduceOp op) override {
    host_reduce(acc, in, count, dtype, op);
  }
  // UCX moves host buffers as they are: nothing it keeps outlives a transfer.
  char* stage(const void* caller, size_t, bool) override { return static_cast<char*>(const_cast<void*>(caller)); }
  void unstage(void*, char*, size_t, bool) override {}

 private:
  std::vector<char> scratch_;
};

}  // namespace

std::unique_ptr<BufferMemory> make_host_memory() { return std::make_unique<HostMemory>(); }

}  // namespace ptdp::comm_ucx
