#include "data/run_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "data/data_files.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// Opening a file reads every token once (to check them against the vocabulary), so a hundred
// shards are opened on every core. A failure names the first bad file in order, as a loop would.
std::vector<TokenDataset> open_in_parallel(const std::vector<std::string>& paths, const std::string& format) {
  std::vector<std::optional<TokenDataset>> opened(paths.size());
  std::vector<std::exception_ptr> failures(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < paths.size();) {
      try {
        opened[i] = TokenDataset::open(paths[i], format);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t workers = std::min<size_t>(paths.size(), std::max(1u, std::thread::hardware_concurrency()));
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  std::vector<TokenDataset> files;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (failures[i]) std::rethrow_exception(failures[i]);
    files.push_back(std::move(*opened[i]));
  }
  return files;
}

std::vector<TokenDataset> open_files(const std::string& entry, const std::string& key, const std::string& format) {
  return open_in_parallel(data_files(entry, key), format);
}

TokenCorpus open_all(const std::vector<std::string>& entries, const std::string& key, const std::string& format) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < entries.size(); ++i)
    for (std::string& path : data_files(entries[i], fmt::format("{}[{}]", key, i))) paths.push_back(std::move(path));
  return TokenCorpus(open_in_parallel(paths, format));
}

}  // namespace

RunData RunData::open(const RunConfig& config) {
  const RunConfig::Data& data = config.data;
  const int vocab = config.model.vocab;
  if (data.path.empty())
    throw Error(fmt::format("{}: data.path is not set: the manifest names no training data", config.source));
  RunData out;
  if (data.weights.empty()) {
    out.train.push_back({open_all(data.path, config.source + ": data.path", data.format)});
  } else {
    PTDP_CHECK(data.weights.size() == data.path.size(), "data.weights: one weight per entry of data.path");
    for (size_t i = 0; i < data.path.size(); ++i)
      out.train.push_back({TokenCorpus(open_files(data.path[i], fmt::format("{}: data.path[{}]", config.source, i), data.format)),
                           data.weights[i]});
  }
  if (!data.val_path.empty()) out.validation = open_all(data.val_path, config.source + ": data.val_path", data.format);
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

namespace {

nlohmann::json corpus_record(const TokenCorpus& corpus) {
  nlohmann::json files = nlohmann::json::array();
  for (const TokenDataset& file : corpus.files()) files.push_back({{"path", file.path()}, {"tokens", file.size()}});
  return files;
}

// "3 files, 1200 tokens" for one list of files of a record.
std::string files_and_tokens(const nlohmann::json& files) {
  int64_t tokens = 0;
  for (const nlohmann::json& file : files) tokens += file.value("tokens", int64_t{0});
  return fmt::format("{} file{}, {} tokens", files.size(), files.size() == 1 ? "" : "s", tokens);
}

}  // namespace

nlohmann::json RunData::record() const {
  nlohmann::json sources = nlohmann::json::array();
  for (const SamplerSource& source : train) sources.push_back({{"weight", source.weight}, {"files", corpus_record(source.corpus)}});
  return {{"train", sources}, {"validation", validation ? corpus_record(*validation) : nlohmann::json::array()}};
}

std::string data_change(const nlohmann::json& saved, const nlohmann::json& now) {
  if (saved == now) return "";
  auto describe = [](const nlohmann::json& record) {
    std::vector<std::string> parts;
    for (const nlohmann::json& source : record.value("train", nlohmann::json::array()))
      parts.push_back(files_and_tokens(source.value("files", nlohmann::json::array())));
    return fmt::format("training {}, validation {}", fmt::join(parts, " + "),
                       files_and_tokens(record.value("validation", nlohmann::json::array())));
  };
  return fmt::format("it was trained on {}, the data are now {}", describe(saved), describe(now));
}

BatchSampler RunData::everything(int seq_len, uint64_t seed) const {
  return BatchSampler::whole(train, seq_len, seed, Split::Train);
}

}  // namespace ptdp
