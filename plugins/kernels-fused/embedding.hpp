#pragma once
// Vocab-parallel word embedding plus learned position embedding, forward and backward. Rows of the
// [s, b, h] output are ordered (position, sample). Word and position tables are read in fp32
// (the master weights), so a row is rounded to act_t once.
#include <cstdint>

#include "dropout.hpp"
#include "kernel_context.hpp"
#include "token_rows.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// out[r] = word[tokens[r] - vocab_begin] when that is one of this shard's `vocab_rows` rows, else 0.
// With `position` (fp32 [s, h]) the row also gets position[r / micro_batch] and then dropout; pass
// null when the rows are still to be summed over the tensor-parallel group.
void embedding_forward(const int32_t* tokens, const float* word, int64_t vocab_begin, int64_t vocab_rows,
                       const float* position, act_t* out, int64_t rows, int64_t hidden, int micro_batch,
                       const DropoutSite& dropout, const KernelContext& ctx);

// out = dropout(out + position[r / micro_batch]), in place: finishes embedding_forward(position =
// null) after the group's all-reduce.
void embedding_add_position(act_t* out, const float* position, int64_t rows, int64_t hidden, int micro_batch,
                            const DropoutSite& dropout, const KernelContext& ctx);

// With g = dropout'(dout): dposition[p] += sum over samples j of g[p * micro_batch + j];
// dword[word_row[u]] += sum of g over the rows of token u. Either accumulator may be null.
void embedding_backward(const act_t* dout, int64_t rows, int64_t hidden, int micro_batch, const DropoutSite& dropout,
                        float* dposition, const TokenRowsView& token_rows, float* dword, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
