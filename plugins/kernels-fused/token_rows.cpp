#include "token_rows.hpp"

#include <algorithm>

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

TokenRows group_rows_by_token(const int32_t* tokens, int64_t count, int64_t vocab_begin, int64_t vocab_rows) {
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(count));
  for (int64_t r = 0; r < count; ++r) {
    const int64_t local = int64_t(tokens[r]) - vocab_begin;
    if (local >= 0 && local < vocab_rows) order.push_back(static_cast<int32_t>(r));
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tokens[a] < tokens[b]; });

  TokenRows out;
  out.listed = static_cast<int32_t>(order.size());
  std::vector<int32_t> word_row, offsets;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || tokens[order[i]] != tokens[order[i - 1]]) {
      word_row.push_back(static_cast<int32_t>(tokens[order[i]] - vocab_begin));
      offsets.push_back(static_cast<int32_t>(i));
    }
  }
  out.unique = static_cast<int32_t>(word_row.size());
  offsets.push_back(out.listed);
  out.packed.reserve(word_row.size() + offsets.size() + order.size());
  out.packed.insert(out.packed.end(), word_row.begin(), word_row.end());
  out.packed.insert(out.packed.end(), offsets.begin(), offsets.end());
  out.packed.insert(out.packed.end(), order.begin(), order.end());
  return out;
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
