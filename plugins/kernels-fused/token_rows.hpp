#pragma once
// For the word-embedding gradient without atomics: the rows of a microbatch grouped by the token
// they hold, built on the host (the token ids arrive there anyway). Each word row that occurs is
// then summed by one block, in row order, so the gradient is the same on every run.
#include <cstdint>
#include <vector>

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct TokenRows {
  int32_t unique = 0;                 // distinct tokens of this rank's vocabulary shard
  int32_t listed = 0;                 // rows holding such a token
  // Packed as [word_row[unique] | offsets[unique + 1] | rows[listed]] for a single upload:
  // word_row[u] is the shard-local row of token u, its rows are rows[offsets[u] .. offsets[u+1]).
  std::vector<int32_t> packed;
};

TokenRows group_rows_by_token(const int32_t* tokens, int64_t count, int64_t vocab_begin, int64_t vocab_rows);

// Device view of an uploaded TokenRows.
struct TokenRowsView {
  const int32_t* word_row = nullptr;
  const int32_t* offsets = nullptr;
  const int32_t* rows = nullptr;
  int32_t unique = 0;
};

inline TokenRowsView view_token_rows(const int32_t* device_packed, int32_t unique) {
  return TokenRowsView{device_packed, device_packed + unique, device_packed + 2 * unique + 1, unique};
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
