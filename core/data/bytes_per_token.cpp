#include "data/bytes_per_token.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "data/run_data.hpp"
#include "data/run_tokenizer.hpp"
#include "data/tokenizer.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// Bytes the tokens [first, end) of `corpus` decode to, over their count. Decoded a chunk at a
// time; a chunk's first piece may lose the space SentencePiece puts before a text, a byte or so in
// a million tokens.
double decoded_bytes_per_token(const TokenCorpus& corpus, int64_t first, int64_t end, const Tokenizer& tokenizer) {
  constexpr int64_t kChunk = 1 << 20;
  std::vector<int32_t> tokens;
  double bytes = 0;
  for (int64_t at = first; at < end; at += kChunk) {
    tokens.resize(static_cast<size_t>(std::min(kChunk, end - at)));
    corpus.read(at, static_cast<int64_t>(tokens.size()), tokens.data());
    bytes += static_cast<double>(tokenizer.decode(tokens).size());
  }
  return end > first ? bytes / static_cast<double>(end - first) : 1;
}

}  // namespace

BytesPerToken bytes_per_token(const RunConfig& config) {
  const RunData data = RunData::open(config);
  const std::optional<RunTokenizer> run = run_tokenizer(config, data);
  if (!run || run->record.kind == "bytes") {
    if (data.train.front().corpus.format() == TokenFileFormat::Text || run) return {};
    throw Error(data.train.front().corpus.name() +
                ": its tokens record no tokenizer; set data.tokenizer to count the bytes they stand for");
  }
  if (config.data.tokenizer.empty())
    throw Error(data.train.front().corpus.name() + ": tokens of " + run->record.describe() +
                "; set data.tokenizer to the file to count the bytes they stand for");
  if (run->record.kind != "sentencepiece")
    throw Error(config.data.tokenizer + ": bytes per token need a SentencePiece tokenizer here; for " +
                run->record.describe() + " count them with the tokenizers library");
  const std::unique_ptr<Tokenizer> tokenizer = open_tokenizer(config.data.tokenizer);
  double total_weight = 0;
  for (const SamplerSource& source : data.train) total_weight += source.weight;
  BytesPerToken out{0, 0};
  for (const SamplerSource& source : data.train) {
    const int64_t size = source.corpus.size();
    const double share = source.weight / total_weight;
    // The split BatchSampler draws from: all of the source with a validation set, else its head.
    const int64_t held_out =
        data.validation ? 0 : static_cast<int64_t>(std::floor(static_cast<double>(size) * config.data.val_fraction));
    out.train += share * decoded_bytes_per_token(source.corpus, 0, size - held_out, *tokenizer);
    if (!data.validation) out.validation += share * decoded_bytes_per_token(source.corpus, size - held_out, size, *tokenizer);
  }
  if (data.validation) out.validation = decoded_bytes_per_token(*data.validation, 0, data.validation->size(), *tokenizer);
  return out;
}

}  // namespace ptdp
