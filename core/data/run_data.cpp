#include "data/run_data.hpp"

#include <fmt/format.h>

#include "data/data_files.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

std::vector<TokenDataset> open_files(const std::string& entry, const std::string& key, const std::string& format) {
  std::vector<TokenDataset> files;
  for (const std::string& path : data_files(entry, key)) files.push_back(TokenDataset::open(path, format));
  return files;
}

TokenCorpus open_all(const std::vector<std::string>& entries, const std::string& key, const std::string& format) {
  std::vector<TokenDataset> files;
  for (size_t i = 0; i < entries.size(); ++i)
    for (TokenDataset& file : open_files(entries[i], fmt::format("{}[{}]", key, i), format))
      files.push_back(std::move(file));
  return TokenCorpus(std::move(files));
}

}  // namespace

RunData RunData::open(const RunConfig& config) {
  const RunConfig::Data& data = config.data;
  const int vocab = config.model.vocab;
  if (data.path.empty())
    throw Error(fmt::format("{}: data.path is not set: the manifest names no training data", config.source));
  RunData out;
  if (data.weights.empty()) {
    out.train.push_back({open_all(data.path, "data.path", data.format)});
  } else {
    PTDP_CHECK(data.weights.size() == data.path.size(), "data.weights: one weight per entry of data.path");
    for (size_t i = 0; i < data.path.size(); ++i)
      out.train.push_back({TokenCorpus(open_files(data.path[i], fmt::format("data.path[{}]", i), data.format)),
                           data.weights[i]});
  }
  if (!data.val_path.empty()) out.validation = open_all(data.val_path, "data.val_path", data.format);
  for (const SamplerSource& source : out.train) {
    check_same_format(out.train.front().corpus, source.corpus);
    source.corpus.check_vocab(vocab);
  }
  if (out.validation) {
    check_same_format(out.train.front().corpus, *out.validation);
    out.validation->check_vocab(vocab);
  }
  return out;
}

BatchSampler RunData::training(int seq_len, uint64_t seed, double val_fraction) const {
  if (validation) return BatchSampler::whole(train, seq_len, seed, Split::Train);
  return BatchSampler(train, seq_len, seed, Split::Train, val_fraction);
}

BatchSampler RunData::validation_batches(int seq_len, uint64_t seed, double val_fraction) const {
  if (validation) return BatchSampler::whole({SamplerSource{*validation}}, seq_len, seed, Split::Validation);
  return BatchSampler(train, seq_len, seed, Split::Validation, val_fraction);
}

BatchSampler RunData::everything(int seq_len, uint64_t seed) const {
  return BatchSampler::whole(train, seq_len, seed, Split::Train);
}

}  // namespace ptdp
