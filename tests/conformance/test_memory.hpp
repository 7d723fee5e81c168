#pragma once
// Where the suite's buffers live: host memory, or device memory filled from and read back into
// host vectors, with work queued on the stream bound to the communicator.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "ptdp/tensor.hpp"

namespace ptdp::conformance {

class TestMemory {
 public:
  virtual ~TestMemory() = default;
  virtual Device device() const = 0;
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  // The stream handed to Communicator::bind_stream (nullptr on the host).
  virtual void* stream() = 0;
  // Waits for everything enqueued on stream().
  virtual void synchronize() = 0;
  // Writes `value` into `count` floats at dst as work on stream() that first runs for about
  // `delay_ms` (at once on the host): an operation must wait for it, not read what was there.
  virtual void fill_later(void* dst, float value, size_t count, int delay_ms) = 0;
};

// Memory of `kind`; CUDA memory is on GPU local_rank % (GPUs present). Throws when this build
// of the suite has no memory of that kind.
std::unique_ptr<TestMemory> memory_for(MemoryKind kind, int local_rank);

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::BF16; }  // raw bf16 bits

// Raw IEEE half bits: a type of their own, so that they are not taken for bf16's.
struct F16Bits {
  uint16_t bits;
  bool operator==(const F16Bits& other) const { return bits == other.bits; }
};
template <> constexpr DType dtype_of<F16Bits>() { return DType::F16; }

// A buffer of `count` elements of T in the test memory.
template <class T>
class Buffer {
 public:
  Buffer(TestMemory& memory, size_t count)
      : memory_(&memory), count_(count), storage_(memory.allocate(std::max<size_t>(count, 1) * sizeof(T))) {}
  Buffer(TestMemory& memory, const std::vector<T>& values) : Buffer(memory, values.size()) { upload(values); }

  void upload(const std::vector<T>& values) { memory_->upload(storage_.get(), values.data(), values.size() * sizeof(T)); }
  std::vector<T> download() {
    memory_->synchronize();
    std::vector<T> values(count_);
    memory_->download(values.data(), storage_.get(), count_ * sizeof(T));
    return values;
  }
  Tensor tensor() const { return Tensor{storage_.get(), dtype_of<T>(), {static_cast<int64_t>(count_)}, memory_->device()}; }

 private:
  TestMemory* memory_;
  size_t count_;
  std::shared_ptr<void> storage_;
};

}  // namespace ptdp::conformance
