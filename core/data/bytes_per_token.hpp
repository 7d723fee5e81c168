#pragma once
// How many bytes of text a token of a run's data stands for, in the tokens its training and its
// validation draw from. A loss per token over this is a loss per byte: what makes runs of
// different tokenizers comparable (bits per byte = loss / ln 2 / bytes per token).
#include "manifest/run_config.hpp"

namespace ptdp {

struct BytesPerToken {
  double train = 1, validation = 1;
};

// 1 for byte-level data; for subword tokens, the bytes data.tokenizer (a SentencePiece model)
// decodes them to, over each split, sources weighted as the sampler draws them. Throws
// ptdp::Error with one line when the data's tokens cannot be turned back into text here: no
// data.tokenizer for tokens that are not bytes, or a tokenizer this build cannot decode with.
BytesPerToken bytes_per_token(const RunConfig& config);

}  // namespace ptdp
