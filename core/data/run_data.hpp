#pragma once
// RunData: the token files a run's [data] table names, opened and checked together, and the
// samplers that draw its training, validation and evaluation batches from them.
#include <optional>
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
};

}  // namespace ptdp
