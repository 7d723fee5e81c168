#include "zero_fill.hpp"

#include <algorithm>
#include <cstdint>

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {

namespace {

// 16-byte stores over [head, head + 16 * quads), single bytes before and after it.
__global__ void zero_fill_kernel(char* data, size_t head, size_t quads, size_t bytes) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t first = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint4* body = reinterpret_cast<uint4*>(data + head);
  for (size_t i = first; i < quads; i += stride) body[i] = make_uint4(0, 0, 0, 0);
  const size_t tail = head + 16 * quads;
  for (size_t i = first; i < head + (bytes - tail); i += stride) data[i < head ? i : tail + (i - head)] = 0;
}

}  // namespace

void zero_fill(void* data, size_t bytes, const KernelContext& ctx) {
  if (bytes == 0) return;
  char* p = static_cast<char*>(data);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16);
  const size_t quads = (bytes - head) / 16;
  const unsigned blocks = std::min<unsigned>(blocks_for(static_cast<long long>(std::max<size_t>(quads, 1)), 256),
                                             unsigned(ctx.sm_count) * 8);
  zero_fill_kernel<<<blocks, 256, 0, ctx.stream>>>(p, head, quads, bytes);
  PTDP_LAUNCH_CHECK(zero_fill_kernel);
}

}  // namespace ptdp::fused
