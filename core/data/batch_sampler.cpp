#include "data/batch_sampler.hpp"

#include <cmath>
#include <vector>

#include "ptdp/counter_rng.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

const char* split_name(Split split) {
  return split == Split::Train ? "training" : "validation";
}

BatchSampler::BatchSampler(const TokenDataset& dataset, int seq_len, uint64_t seed, Split split,
                           double val_fraction)
    : dataset_(dataset), seq_len_(seq_len), split_(split),
      key_(rng::name_key(seed, split == Split::Train ? "data.train" : "data.validation")) {
  const std::string& path = dataset.path();
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    throw Error(path + ": data.val_fraction must be in [0, 1), got " + std::to_string(val_fraction));
  if (seq_len < 1) throw Error(path + ": seq_len must be positive, got " + std::to_string(seq_len));
  int64_t total = dataset.size();
  auto val_tokens = static_cast<int64_t>(std::floor(static_cast<double>(total) * val_fraction));
  int64_t train_tokens = total - val_tokens;
  if (split == Split::Validation && val_fraction == 0.0)
    throw Error(path + ": no validation split: data.val_fraction is 0");
  begin_ = split == Split::Train ? 0 : train_tokens;
  end_ = split == Split::Train ? train_tokens : total;
  if (end_ - begin_ < static_cast<int64_t>(seq_len) + 1)
    throw Error(path + ": the " + split_name(split) + " split has " + std::to_string(end_ - begin_) +
                " tokens (training " + std::to_string(train_tokens) + ", validation " +
                std::to_string(val_tokens) + " of " + std::to_string(total) +
                "), fewer than seq_len + 1 = " + std::to_string(seq_len + 1));
}

int64_t BatchSampler::window_start(int64_t step, int64_t global_sample) const {
  PTDP_CHECK(step >= 0 && global_sample >= 0, "BatchSampler: negative step or sample index");
  rng::Philox4 r = rng::philox(key_, static_cast<uint64_t>(step), static_cast<uint64_t>(global_sample));
  uint64_t bits = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
  // Starts leave room for seq_len + 1 tokens; the modulo bias is below 2^-40 for any real file.
  auto starts = static_cast<uint64_t>(end_ - begin_ - seq_len_);
  return begin_ + static_cast<int64_t>(bits % starts);
}

void BatchSampler::sample(int64_t step, int64_t global_sample, int32_t* tokens,
                          int32_t* targets) const {
  microbatch(step, global_sample, 1, tokens, targets);
}

void BatchSampler::microbatch(int64_t step, int64_t first_sample, int b, int32_t* tokens,
                              int32_t* targets) const {
  PTDP_CHECK(b >= 1, "BatchSampler: microbatch size must be positive");
  std::vector<int32_t> window(static_cast<size_t>(seq_len_) + 1);
  for (int j = 0; j < b; ++j) {
    dataset_.read(window_start(step, first_sample + j), seq_len_ + 1, window.data());
    for (int i = 0; i < seq_len_; ++i) {
      tokens[static_cast<size_t>(i) * b + j] = window[i];
      targets[static_cast<size_t>(i) * b + j] = window[i + 1];
    }
  }
}

}  // namespace ptdp
