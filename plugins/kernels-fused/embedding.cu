#include "embedding.hpp"

#include <algorithm>

#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

template <int VEC, bool LOOKUP, bool FINISH>
__global__ void embedding_kernel(const int32_t* __restrict__ tokens, const float* __restrict__ word,
                                 int64_t vocab_begin, int64_t vocab_rows, const float* __restrict__ position, act_t* out,
                                 int64_t rows, int64_t hidden, int micro_batch, DropoutSite dropout) {
  const int64_t vecs_per_row = hidden / VEC;
  const int64_t total = rows * vecs_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / vecs_per_row;
    const int64_t col = (i - row * vecs_per_row) * VEC;
    float v[VEC];
    if constexpr (LOOKUP) {
      const int64_t local = int64_t(tokens[row]) - vocab_begin;
      if (local >= 0 && local < vocab_rows) {
        load_vec<VEC>(word + local * hidden + col, v);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[k] = 0.0f;
      }
    } else {
      load_vec<VEC>(out + row * hidden + col, v);
    }
    if constexpr (FINISH) {
      float p[VEC];
      load_vec<VEC>(position + (row / micro_batch) * hidden + col, p);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        v[k] += p[k];
        if (dropout.active()) v[k] *= dropout.factor(row, col + k);
      }
    }
    store_vec<VEC>(out + row * hidden + col, v);
  }
}

template <bool LOOKUP, bool FINISH>
void launch_embedding(const int32_t* tokens, const float* word, int64_t vocab_begin, int64_t vocab_rows,
                      const float* position, act_t* out, int64_t rows, int64_t hidden, int micro_batch,
                      const DropoutSite& dropout, const KernelContext& ctx) {
  const int vec = row_vector_width(hidden);
  const unsigned blocks = std::min<unsigned>(blocks_for(rows * hidden / vec, 256), unsigned(ctx.sm_count) * 16);
  if (vec == 8)
    embedding_kernel<8, LOOKUP, FINISH><<<blocks, 256, 0, ctx.stream>>>(tokens, word, vocab_begin, vocab_rows, position,
                                                                       out, rows, hidden, micro_batch, dropout);
  else
    embedding_kernel<1, LOOKUP, FINISH><<<blocks, 256, 0, ctx.stream>>>(tokens, word, vocab_begin, vocab_rows, position,
                                                                       out, rows, hidden, micro_batch, dropout);
  PTDP_LAUNCH_CHECK(embedding_kernel);
}

__global__ void dropout_grad_kernel(const act_t* __restrict__ dout, float* __restrict__ grad, int64_t rows,
                                    int64_t hidden, DropoutSite dropout) {
  const int64_t total = rows * hidden;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / hidden;
    const float g = to_float(dout[i]);
    grad[i] = dropout.active() ? g * dropout.factor(row, i - row * hidden) : g;
  }
}

// One thread per (position, feature), summing the microbatch's samples in order.
__global__ void position_grad_kernel(const float* __restrict__ grad, int64_t positions, int64_t hidden,
                                     int micro_batch, float* __restrict__ dposition) {
  const int64_t total = positions * hidden;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i / hidden, f = i - p * hidden;
    float sum = 0.0f;
    for (int j = 0; j < micro_batch; ++j) sum += grad[(p * micro_batch + j) * hidden + f];
    dposition[i] += sum;
  }
}

// One block row per distinct token: its occurrences are summed in row order, then added once.
__global__ void word_grad_kernel(const float* __restrict__ grad, int64_t hidden, TokenRowsView token_rows,
                                 float* __restrict__ dword) {
  const int32_t u = blockIdx.x;
  const int64_t f = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (f >= hidden) return;
  float sum = 0.0f;
  for (int32_t k = token_rows.offsets[u]; k < token_rows.offsets[u + 1]; ++k)
    sum += grad[int64_t(token_rows.rows[k]) * hidden + f];
  dword[int64_t(token_rows.word_row[u]) * hidden + f] += sum;
}

}  // namespace

void embedding_forward(const int32_t* tokens, const float* word, int64_t vocab_begin, int64_t vocab_rows,
                       const float* position, act_t* out, int64_t rows, int64_t hidden, int micro_batch,
                       const DropoutSite& dropout, const KernelContext& ctx) {
  if (rows == 0 || hidden == 0) return;
  if (position)
    launch_embedding<true, true>(tokens, word, vocab_begin, vocab_rows, position, out, rows, hidden, micro_batch,
                                 dropout, ctx);
  else
    launch_embedding<true, false>(tokens, word, vocab_begin, vocab_rows, nullptr, out, rows, hidden, micro_batch,
                                  dropout, ctx);
}

void embedding_add_position(act_t* out, const float* position, int64_t rows, int64_t hidden, int micro_batch,
                            const DropoutSite& dropout, const KernelContext& ctx) {
  if (rows == 0 || hidden == 0) return;
  launch_embedding<false, true>(nullptr, nullptr, 0, 0, position, out, rows, hidden, micro_batch, dropout, ctx);
}

void embedding_backward(const act_t* dout, int64_t rows, int64_t hidden, int micro_batch, const DropoutSite& dropout,
                        float* dposition, const TokenRowsView& token_rows, float* dword, const KernelContext& ctx) {
  if (rows == 0 || hidden == 0) return;
  const unsigned blocks = std::min<unsigned>(blocks_for(rows * hidden, 256), unsigned(ctx.sm_count) * 16);
  auto grad = allocate_buffer<float>(*ctx.arena, size_t(rows) * hidden);
  dropout_grad_kernel<<<blocks, 256, 0, ctx.stream>>>(dout, grad.get(), rows, hidden, dropout);
  PTDP_LAUNCH_CHECK(dropout_grad_kernel);
  if (dposition) {
    const int64_t positions = rows / micro_batch;
    position_grad_kernel<<<std::min<unsigned>(blocks_for(positions * hidden, 256), unsigned(ctx.sm_count) * 16), 256, 0,
                           ctx.stream>>>(grad.get(), positions, hidden, micro_batch, dposition);
    PTDP_LAUNCH_CHECK(position_grad_kernel);
  }
  if (dword && token_rows.unique > 0) {
    const dim3 grid(static_cast<unsigned>(token_rows.unique), blocks_for(hidden, 256));
    word_grad_kernel<<<grid, 256, 0, ctx.stream>>>(grad.get(), hidden, token_rows, dword);
    PTDP_LAUNCH_CHECK(word_grad_kernel);
  }
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
