#pragma once
// BatchSampler: which token windows make up each global batch.
//
// Sample g of step k is the window of seq_len + 1 tokens starting at a position that is a pure
// function of (seed, k, g), drawn with the counter-based RNG. Whatever the layout (p, t, d) and
// however a step is cut into data-parallel ranks and microbatches, global sample g of step k is
// the same sequence, so every layout trains on the same global batch.
//
// The file's tail (val_fraction of its tokens) is the validation split; training windows never
// touch it. For the validation split `step` is the validation batch index: validation batch k is
// the same set of windows whenever it is evaluated, so losses are comparable across training.
#include <cstdint>

#include "data/token_dataset.hpp"

namespace ptdp {

enum class Split { Train, Validation };

const char* split_name(Split split);

class BatchSampler {
 public:
  // Throws ptdp::Error naming the file and the split sizes when the split is shorter than
  // seq_len + 1 tokens, or when val_fraction is outside [0, 1) (or 0 for the validation split).
  BatchSampler(const TokenDataset& dataset, int seq_len, uint64_t seed, Split split,
               double val_fraction);

  Split split() const { return split_; }
  int seq_len() const { return seq_len_; }
  // The split is tokens [split_begin(), split_end()) of the file.
  int64_t split_begin() const { return begin_; }
  int64_t split_end() const { return end_; }

  // Index in the file of the first token of global sample g of `step`.
  int64_t window_start(int64_t step, int64_t global_sample) const;

  // One sequence: tokens[i] = window[i], targets[i] = window[i + 1], i < seq_len.
  void sample(int64_t step, int64_t global_sample, int32_t* tokens, int32_t* targets) const;

  // Global samples first_sample .. first_sample + b - 1 of `step`, time-major [s, b]: position i
  // of column j at i * b + j (the layout the kernels take).
  void microbatch(int64_t step, int64_t first_sample, int b, int32_t* tokens,
                  int32_t* targets) const;

 private:
  TokenDataset dataset_;
  int seq_len_;
  Split split_;
  uint64_t key_;
  int64_t begin_ = 0, end_ = 0;
};

}  // namespace ptdp
