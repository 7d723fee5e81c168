#pragma once
// Tensor: a non-owning view of memory that a LayerKernels backend or a Communicator touches.
// Ownership stays with whoever allocated it (OwnedTensor ties the view to its storage).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptdp/error.hpp"

namespace ptdp {

enum class DType : uint8_t { F32, BF16, F16, I32, I64, U16, U8 };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::BF16: case DType::F16: case DType::U16: return 2;
    case DType::I64: return 8;
    case DType::U8: return 1;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U16: return "u16";
    case DType::U8: return "u8";
  }
  return "?";
}

enum class MemoryKind : uint8_t { Host = 0, Cuda = 1 };

// Bit set of MemoryKind, used by plugins to declare which memory they read and write.
inline uint32_t memory_bit(MemoryKind k) { return 1u << static_cast<uint32_t>(k); }

struct Device {
  MemoryKind kind = MemoryKind::Host;
  int index = 0;
};

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Device device;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }

  template <class T>
  T* as() const { return static_cast<T*>(data); }

  // A contiguous 1-D view of elements [offset, offset + count) of this tensor's flat storage;
  // pointer arithmetic only, so it is valid for host and device memory alike.
  Tensor flat_slice(int64_t offset, int64_t count) const {
    PTDP_CHECK(offset >= 0 && count >= 0 && offset + count <= numel(),
               "flat_slice out of range");
    Tensor t = *this;
    t.data = static_cast<char*>(data) + static_cast<size_t>(offset) * dtype_size(dtype);
    t.shape = {count};
    return t;
  }
};

// A tensor together with the storage that keeps it alive; storage is released by the backend
// that allocated it when the last holder goes away.
struct OwnedTensor {
  Tensor view;
  std::shared_ptr<void> storage;
};

inline std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace ptdp
