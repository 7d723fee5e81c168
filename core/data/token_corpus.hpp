#pragma once
// TokenCorpus: token files read as one sequence of tokens, in order. llm.c's shards each begin a
// document with an end-of-text token, so where one shard ends and the next begins is a document
// boundary like any other, and a window may run across it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/token_dataset.hpp"

namespace ptdp {

class TokenCorpus {
 public:
  // Throws ptdp::Error naming both files when they are not of one format or record different
  // tokenizers: the same id then means different pieces.
  explicit TokenCorpus(std::vector<TokenDataset> files);

  const std::vector<TokenDataset>& files() const { return files_; }
  // The first file's path, and how many follow it: what messages call the corpus.
  std::string name() const;
  TokenFileFormat format() const { return files_.front().format(); }
  int64_t size() const { return size_; }
  // The tokenizer the files record (all that record one record the same), if any does.
  std::optional<TokenizerRecord> tokenizer() const;

  // Tokens [first, first + count) of the concatenation, widened to int32.
  void read(int64_t first, int64_t count, int32_t* out) const;

  // Throws ptdp::Error naming the file, the largest token and its index when a token does not
  // fit a vocabulary of `vocab` ids.
  void check_vocab(int vocab) const;

 private:
  std::vector<TokenDataset> files_;
  std::vector<int64_t> starts_;  // starts_[i]: index of file i's first token in the concatenation
  int64_t size_ = 0;
};

// Throws ptdp::Error naming both files when `a` and `b` are not of one format or tokenizer.
void check_same_format(const TokenCorpus& a, const TokenCorpus& b);

}  // namespace ptdp
