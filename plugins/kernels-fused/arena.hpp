#pragma once
// DeviceArena: a caching allocator for one device. Blocks are rounded to a size class and, when
// their last holder lets go, kept for the next request of that class instead of going back to
// cudaFree; a training step repeats the same shapes, so after the first step no call reaches
// cudaMalloc. All work of the backend runs on one stream, so a block released while kernels that
// use it are still queued may be handed out again at once: its next user is queued behind them.
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class DeviceArena : public std::enable_shared_from_this<DeviceArena> {
 public:
  // `log` hears of blocks that cannot be freed when the arena goes.
  static std::shared_ptr<DeviceArena> create(int device, PluginLog log = {});
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // At least `bytes` of device memory, 256-byte aligned, contents undefined. The block returns to
  // the cache when the last copy of the pointer is dropped.
  std::shared_ptr<void> allocate(size_t bytes);

  // Gives every cached block back to the device (cudaFree waits for work that still reads one).
  void release_cached();

  size_t bytes_in_use() const;
  size_t bytes_cached() const;
  // The most bytes in use at once since the arena was made or reset_peak() was last called.
  size_t peak_bytes_in_use() const;
  void reset_peak();

  static size_t size_class(size_t bytes);

 private:
  DeviceArena(int device, PluginLog log) : device_(device), log_(std::move(log)) {}
  void release(void* block, size_t size);
  void free_cached_locked();

  int device_;
  PluginLog log_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t in_use_ = 0;
  size_t peak_in_use_ = 0;
  size_t cached_ = 0;
};

// A typed view of an arena block.
template <class T>
struct DeviceBuffer {
  std::shared_ptr<void> block;
  T* get() const { return static_cast<T*>(block.get()); }
  explicit operator bool() const { return block != nullptr; }
};

template <class T>
DeviceBuffer<T> allocate_buffer(DeviceArena& arena, size_t count) {
  return DeviceBuffer<T>{arena.allocate(count * sizeof(T))};
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
