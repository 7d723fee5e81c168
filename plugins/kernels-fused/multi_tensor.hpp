#pragma once
// Multi-tensor launches: one kernel over a whole list of tensors. The list is split into chunks of
// kChunkElements; block b works on chunk b. The per-tensor descriptors and the chunk list travel to
// the device as one metadata block, built on the host and cached, since the optimizer sees the
// same list every step.
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <vector>

#include "arena.hpp"
#include "host_upload.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

constexpr int64_t kChunkElements = 65536;

struct ChunkRef {
  int32_t tensor;
  int32_t chunk;
};

// Host image of [T descriptors... | ChunkRef chunks...]; T has a `numel` member.
struct MultiTensorMetadata {
  std::vector<uint8_t> bytes;
  size_t chunks_offset = 0;
  int chunk_count = 0;
};

template <class T>
MultiTensorMetadata pack_multi_tensor(const std::vector<T>& tensors) {
  MultiTensorMetadata m;
  std::vector<ChunkRef> chunks;
  for (size_t t = 0; t < tensors.size(); ++t)
    for (int64_t c = 0; c * kChunkElements < tensors[t].numel; ++c)
      chunks.push_back(ChunkRef{static_cast<int32_t>(t), static_cast<int32_t>(c)});
  m.chunks_offset = (tensors.size() * sizeof(T) + 15) / 16 * 16;
  m.chunk_count = static_cast<int>(chunks.size());
  m.bytes.assign(m.chunks_offset + chunks.size() * sizeof(ChunkRef), 0);
  if (!tensors.empty()) std::memcpy(m.bytes.data(), tensors.data(), tensors.size() * sizeof(T));
  if (!chunks.empty()) std::memcpy(m.bytes.data() + m.chunks_offset, chunks.data(), chunks.size() * sizeof(ChunkRef));
  return m;
}

// Device copies of recent metadata blocks, found again by content.
class MetadataCache {
 public:
  MetadataCache(DeviceArena& arena, HostUpload& upload) : arena_(arena), upload_(upload) {}
  const void* device_copy(const std::vector<uint8_t>& bytes);

 private:
  static constexpr size_t kEntries = 8;
  DeviceArena& arena_;
  HostUpload& upload_;
  std::list<std::pair<std::vector<uint8_t>, std::shared_ptr<void>>> entries_;  // most recent first
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
