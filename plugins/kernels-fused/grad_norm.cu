#include "grad_norm.hpp"

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

constexpr int kThreads = 512;

__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width >>= 1) {
    if (int(threadIdx.x) < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  return shared[0];
}

__global__ void square_sum_chunks_kernel(const SquareSumTensor* __restrict__ tensors,
                                         const ChunkRef* __restrict__ chunks, double* __restrict__ partials) {
  __shared__ double shared[kThreads];
  const ChunkRef c = chunks[blockIdx.x];
  const SquareSumTensor t = tensors[c.tensor];
  const int64_t begin = int64_t(c.chunk) * kChunkElements;
  const int64_t end = min(t.numel, begin + kChunkElements);
  double sum = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double x = t.data[i];
    sum += x * x;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void sum_partials_kernel(const double* __restrict__ partials, int count, double* __restrict__ result,
                                    float* __restrict__ as_float) {
  __shared__ double shared[kThreads];
  double sum = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) {
    result[0] = sum;
    if (as_float) as_float[0] = float(sum);
  }
}

}  // namespace

void sum_of_squares(const void* metadata, size_t chunks_offset, int chunk_count, double* result,
                    const KernelContext& ctx, float* as_float) {
  if (chunk_count == 0) {
    PTDP_CALL(cudaMemsetAsync(result, 0, sizeof(double), ctx.stream));
    if (as_float) PTDP_CALL(cudaMemsetAsync(as_float, 0, sizeof(float), ctx.stream));
    return;
  }
  const auto* tensors = static_cast<const SquareSumTensor*>(metadata);
  const auto* chunks = reinterpret_cast<const ChunkRef*>(static_cast<const char*>(metadata) + chunks_offset);
  auto partials = allocate_buffer<double>(*ctx.arena, size_t(chunk_count));
  square_sum_chunks_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, ctx.stream>>>(tensors, chunks,
                                                                                            partials.get());
  PTDP_LAUNCH_CHECK(square_sum_chunks_kernel);
  sum_partials_kernel<<<1, kThreads, 0, ctx.stream>>>(partials.get(), chunk_count, result, as_float);
  PTDP_LAUNCH_CHECK(sum_partials_kernel);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
