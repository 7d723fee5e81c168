#pragma once
// BatchSampler: which token windows make up each global batch.
//
// Sample g of step k is the window of seq_len + 1 tokens starting at a position that is a pure
// function of (seed, k, g), drawn with the counter-based RNG. Whatever the layout (p, t, d) and
// however a step is cut into data-parallel ranks and microbatches, global sample g of step k is
// the same sequence, so every layout trains on the same global batch, and a run resumed at step
// k draws the batches it would have drawn had it never stopped.
//
// The data are one or more sources (a blend: each sample comes from source i with probability
// weight_i / Σ weight). Without a separate validation set, each source's tail (val_fraction of
// its tokens) is its validation split and training windows never touch it. For validation
// `step` is the validation batch index: validation batch k is the same set of windows whenever
// it is evaluated, so losses are comparable across training.
#include <cstdint>
#include <vector>

#include "data/token_corpus.hpp"
#include "data/token_dataset.hpp"

namespace ptdp {

enum class Split { Train, Validation };

const char* split_name(Split split);

struct SamplerSource {
  TokenCorpus corpus;
  double weight = 1.0;  // relative; only the ratios between sources matter
};

class BatchSampler {
 public:
  // The training part or the validation tail of each source under val_fraction. Throws
  // ptdp::Error naming the source and the split sizes when a split is shorter than seq_len + 1
  // tokens, or when val_fraction is outside [0, 1) (or 0 for the validation split).
  BatchSampler(std::vector<SamplerSource> sources, int seq_len, uint64_t seed, Split split, double val_fraction);
  BatchSampler(const TokenDataset& dataset, int seq_len, uint64_t seed, Split split, double val_fraction);
  // Every token of each source, drawn with `split`'s key: a separate validation set, or the data
  // `ptdp-host eval` scores. Throws ptdp::Error when a source is shorter than seq_len + 1 tokens.
  static BatchSampler whole(std::vector<SamplerSource> sources, int seq_len, uint64_t seed, Split split);

  Split split() const { return split_; }
  int seq_len() const { return seq_len_; }
  // The first source's split is tokens [split_begin(), split_end()) of its corpus.
  int64_t split_begin() const { return ranges_.front().begin; }
  int64_t split_end() const { return ranges_.front().end; }

  struct Window {
    size_t source;
    int64_t start;  // index in the source's corpus of the window's first token
  };
  Window window(int64_t step, int64_t global_sample) const;
  // window(step, global_sample).start.
  int64_t window_start(int64_t step, int64_t global_sample) const;

  // One sequence: tokens[i] = window[i], targets[i] = window[i + 1], i < seq_len.
  void sample(int64_t step, int64_t global_sample, int32_t* tokens, int32_t* targets) const;

  // Global samples first_sample .. first_sample + b - 1 of `step`, time-major [s, b]: position i
  // of column j at i * b + j (the layout the kernels take).
  void microbatch(int64_t step, int64_t first_sample, int b, int32_t* tokens,
                  int32_t* targets) const;

 private:
  struct Range {
    int64_t begin, end;
  };
  BatchSampler(std::vector<SamplerSource> sources, int seq_len, uint64_t seed, Split split);
  void check_ranges(const std::vector<int64_t>& held_out) const;

  std::vector<SamplerSource> sources_;
  std::vector<Range> ranges_;      // per source, the tokens this sampler draws from
  std::vector<double> cumulative_; // per source, Σ of the normalized weights up to and including it
  int seq_len_;
  Split split_;
  uint64_t key_;
};

}  // namespace ptdp
