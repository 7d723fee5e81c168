#pragma once
// Where a model chunk's parameters lie in its flat buffers (master weights and gradients share
// one layout), and how the gradient buffer is cut into buckets for the data-parallel reduction.
// Parameters are laid out last layer first, the order in which backward finishes them, so a
// bucket is a contiguous range whose gradients are all final at one moment of the backward.
// Every parameter starts on a kAlignElements boundary and every bucket's size is a multiple of
// kAlignElements·d, so each rank's 1/d shard of a bucket (the distributed optimizer's) starts
// aligned too.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ptdp {

constexpr int64_t kAlignElements = 64;  // 256 bytes of f32

// What the layout needs to know of one parameter.
struct LayoutEntry {
  int64_t numel = 0;
  int unit = 0;        // the chunk's layer that holds it, in forward order (embedding, blocks, head)
  bool alone = false;  // gets a bucket of its own (the tied word embedding, summed at the flush)
};

struct GradientBucket {
  int64_t offset = 0, size = 0;  // a range of the chunk's buffers
  std::vector<size_t> params;    // indices of the parameters inside it
  int final_after_unit = 0;      // its gradients are final once this layer's last backward ran
  bool alone = false;
};

// One parameter's place: its first element in the chunk's buffers.
struct BufferLayout {
  int64_t size = 0;
  std::vector<int64_t> offsets;          // per parameter, in the order given
  std::vector<GradientBucket> buckets;   // in the order backward finishes them
};

// A bucket closes once it holds at least bucket_elements (one parameter larger than that gets a
// bucket to itself, as in Megatron-Core and PyTorch DDP).
BufferLayout plan_buffer_layout(const std::vector<LayoutEntry>& params, int64_t bucket_elements, int data_parallel);

// The part of parameter `index` that lies in [begin, end) of the buffers, as an offset into the
// parameter and a count (count 0 when they do not meet).
struct ParamRange {
  size_t param = 0;
  int64_t offset = 0, count = 0;
};
std::vector<ParamRange> params_in_range(const BufferLayout& layout, const std::vector<LayoutEntry>& params,
                                        int64_t begin, int64_t end);

}  // namespace ptdp
