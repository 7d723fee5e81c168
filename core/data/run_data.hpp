#pragma once
// RunData: the token files a run's [data] table names, opened and checked together, and the
// samplers that draw its training, validation and evaluation batches from them.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <vector>

#include "data/batch_sampler.hpp"
#include "manifest/run_config.hpp"

namespace ptdp {

struct RunData {
  // One source per entry of data.path under data.weights (a blend), else one source of all of them.
  std::vector<SamplerSource> train;
  std::optional<TokenCorpus> validation;  // data.val_path, when set

  // Opens every file of config.data (each glob expanded). Throws ptdp::Error with one line when
  // data.path is empty, a glob matches nothing, a file is missing or malformed, the files are not
  // all of one format, or a token does not fit model.vocab.
  static RunData open(const RunConfig& config);

  BatchSampler training(int seq_len, uint64_t seed, double val_fraction) const;
  // data.val_path when set, else the tail of each training source.
  BatchSampler validation_batches(int seq_len, uint64_t seed, double val_fraction) const;
  // Every token of the training data: what `ptdp-host eval` scores.
  BatchSampler everything(int seq_len, uint64_t seed) const;

  // The files and their token counts, source by source: what a checkpoint step records, so a
  // resumed run can tell whether it still draws from the data it was trained on.
  nlohmann::json record() const;
};

// How `now` differs from `saved` (two record()s), in a few words; empty when they are the same.
std::string data_change(const nlohmann::json& saved, const nlohmann::json& now);

}  // namespace ptdp
