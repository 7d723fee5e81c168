#pragma once
// Initialization per global tensor: element e of tensor `name` is a pure function of
// (seed, name, e), and each rank computes only the elements of its own part. So every layout
// (p, t, d, v) starts from the same model, which is what makes its losses equal one rank's.
#include <cstdint>
#include <functional>
#include <vector>

#include <ptdp/layer_kernels.hpp>

namespace ptdp {

// Calls fn(local_index, global_index) for every element of the rank's part of the tensor, in
// local row-major order. The part is the global tensor cut along ref.shard_dim at
// ref.shard_offset with the extent of ref.master's shape.
// [begin, end) limits the local elements visited (default: all), so that threads can share a tensor.
void for_each_global_index(const ParamRef& ref, const std::function<void(int64_t, int64_t)>& fn,
                           int64_t begin = 0, int64_t end = -1);

// GPT-2 initialization: weights N(0, 0.02), the residual projections (attn.proj, mlp.fc2)
// N(0, 0.02/sqrt(2·layers)), biases 0, LayerNorm gains 1; padded vocab rows 0.
// Writes host values (on all hardware threads: a billion-parameter model has a billion draws);
// the caller copies them to the device.
std::vector<float> initial_values(const ParamRef& ref, uint64_t seed, int layers, int vocab);

}  // namespace ptdp
