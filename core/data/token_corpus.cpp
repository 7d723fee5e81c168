#include "data/token_corpus.hpp"

#include <algorithm>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

void check_same_format(const TokenDataset& first, const TokenDataset& other) {
  if (other.format() != first.format())
    throw Error(other.path() + ": a " + token_file_format_name(other.format()) + " file, but " + first.path() +
                " is a " + token_file_format_name(first.format()) +
                " file: the files of one run's data must share one format");
  const auto &a = first.tokenizer(), &b = other.tokenizer();
  if (a && b && !a->same_tokenizer(*b))
    throw Error(other.path() + ": tokens of " + b->describe() + ", but " + first.path() + " holds tokens of " +
                a->describe() + ": the files of one run's data must come from one tokenizer");
}

}  // namespace

TokenCorpus::TokenCorpus(std::vector<TokenDataset> files) : files_(std::move(files)) {
  PTDP_CHECK(!files_.empty(), "TokenCorpus: no files");
  for (const TokenDataset& file : files_) {
    check_same_format(files_.front(), file);
    starts_.push_back(size_);
    size_ += file.size();
  }
}

std::string TokenCorpus::name() const {
  if (files_.size() == 1) return files_.front().path();
  return files_.front().path() + " and " + std::to_string(files_.size() - 1) + " more file" +
         (files_.size() > 2 ? "s" : "");
}

void TokenCorpus::read(int64_t first, int64_t count, int32_t* out) const {
  PTDP_CHECK(first >= 0 && count >= 0 && first + count <= size_,
             name() + ": tokens [" + std::to_string(first) + ", " + std::to_string(first + count) +
                 ") lie outside the " + std::to_string(size_) + " tokens");
  auto file = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), first) - starts_.begin() - 1);
  while (count > 0) {
    const int64_t offset = first - starts_[file];
    const int64_t n = std::min(count, files_[file].size() - offset);
    files_[file].read(offset, n, out);
    first += n;
    count -= n;
    out += n;
    ++file;
  }
}

std::optional<TokenizerRecord> TokenCorpus::tokenizer() const {
  for (const TokenDataset& file : files_)
    if (file.tokenizer()) return file.tokenizer();
  return std::nullopt;
}

void TokenCorpus::check_vocab(int vocab) const {
  for (const TokenDataset& file : files_) file.check_vocab(vocab);
}

void check_same_format(const TokenCorpus& a, const TokenCorpus& b) {
  check_same_format(a.files().front(), b.files().front());
}

}  // namespace ptdp
