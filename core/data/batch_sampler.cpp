#include "data/batch_sampler.hpp"

#include <algorithm>
#include <cmath>

#include "ptdp/counter_rng.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

const char* split_name(Split split) {
  return split == Split::Train ? "training" : "validation";
}

BatchSampler::BatchSampler(std::vector<SamplerSource> sources, int seq_len, uint64_t seed, Split split)
    : sources_(std::move(sources)), seq_len_(seq_len), split_(split),
      key_(rng::name_key(seed, split == Split::Train ? "data.train" : "data.validation")) {
  PTDP_CHECK(!sources_.empty(), "BatchSampler: no data sources");
  if (seq_len < 1)
    throw Error(sources_.front().corpus.name() + ": seq_len must be positive, got " + std::to_string(seq_len));
  double total = 0;
  for (const SamplerSource& source : sources_) {
    PTDP_CHECK(source.weight > 0 && std::isfinite(source.weight), "BatchSampler: weights must be positive");
    total += source.weight;
  }
  double sum = 0;
  for (const SamplerSource& source : sources_) cumulative_.push_back(sum += source.weight / total);
  cumulative_.back() = 1.0;  // whatever the rounding, every draw lands in some source
}

BatchSampler::BatchSampler(std::vector<SamplerSource> sources, int seq_len, uint64_t seed, Split split,
                           double val_fraction)
    : BatchSampler(std::move(sources), seq_len, seed, split) {
  const std::string name = sources_.front().corpus.name();
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    throw Error(name + ": data.val_fraction must be in [0, 1), got " + std::to_string(val_fraction));
  if (split == Split::Validation && val_fraction == 0.0)
    throw Error(name + ": no validation split: data.val_fraction is 0");
  std::vector<int64_t> held_out;
  for (const SamplerSource& source : sources_) {
    const int64_t total = source.corpus.size();
    auto val_tokens = static_cast<int64_t>(std::floor(static_cast<double>(total) * val_fraction));
    const int64_t train_tokens = total - val_tokens;
    ranges_.push_back(split == Split::Train ? Range{0, train_tokens} : Range{train_tokens, total});
    held_out.push_back(val_tokens);
  }
  check_ranges(held_out);
}

BatchSampler::BatchSampler(const TokenDataset& dataset, int seq_len, uint64_t seed, Split split,
                           double val_fraction)
    : BatchSampler({SamplerSource{TokenCorpus({dataset})}}, seq_len, seed, split, val_fraction) {}

BatchSampler BatchSampler::whole(std::vector<SamplerSource> sources, int seq_len, uint64_t seed, Split split) {
  BatchSampler sampler(std::move(sources), seq_len, seed, split);
  for (const SamplerSource& source : sampler.sources_) sampler.ranges_.push_back({0, source.corpus.size()});
  sampler.check_ranges({});
  return sampler;
}

// held_out: per source, the tokens of its validation tail; empty when the sampler reads whole sources.
void BatchSampler::check_ranges(const std::vector<int64_t>& held_out) const {
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Range& range = ranges_[i];
    if (range.end - range.begin >= static_cast<int64_t>(seq_len_) + 1) continue;
    const TokenCorpus& corpus = sources_[i].corpus;
    const std::string tokens = std::to_string(range.end - range.begin);
    const std::string needed = "fewer than seq_len + 1 = " + std::to_string(seq_len_ + 1);
    if (held_out.empty())
      throw Error(corpus.name() + ": the " + split_name(split_) + " set has " + tokens + " tokens, " + needed);
    throw Error(corpus.name() + ": the " + split_name(split_) + " split has " + tokens + " tokens (training " +
                std::to_string(corpus.size() - held_out[i]) + ", validation " + std::to_string(held_out[i]) +
                " of " + std::to_string(corpus.size()) + "), " + needed);
  }
}

BatchSampler::Window BatchSampler::window(int64_t step, int64_t global_sample) const {
  PTDP_CHECK(step >= 0 && global_sample >= 0, "BatchSampler: negative step or sample index");
  rng::Philox4 r = rng::philox(key_, static_cast<uint64_t>(step), static_cast<uint64_t>(global_sample));
  size_t source = 0;
  if (sources_.size() > 1) {
    // Words 2 and 3 pick the source, so a single source draws exactly the windows it always did.
    const uint64_t pick = (static_cast<uint64_t>(r.v[3]) << 32) | r.v[2];
    const double u = std::ldexp(static_cast<double>(pick >> 11), -53);  // uniform in [0, 1)
    source = static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
  }
  const uint64_t bits = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
  // Starts leave room for seq_len + 1 tokens; the modulo bias is below 2^-40 for any real file.
  const Range& range = ranges_[source];
  auto starts = static_cast<uint64_t>(range.end - range.begin - seq_len_);
  return {source, range.begin + static_cast<int64_t>(bits % starts)};
}

int64_t BatchSampler::window_start(int64_t step, int64_t global_sample) const {
  return window(step, global_sample).start;
}

void BatchSampler::sample(int64_t step, int64_t global_sample, int32_t* tokens,
                          int32_t* targets) const {
  microbatch(step, global_sample, 1, tokens, targets);
}

void BatchSampler::microbatch(int64_t step, int64_t first_sample, int b, int32_t* tokens,
                              int32_t* targets) const {
  PTDP_CHECK(b >= 1, "BatchSampler: microbatch size must be positive");
  std::vector<int32_t> window_tokens(static_cast<size_t>(seq_len_) + 1);
  for (int j = 0; j < b; ++j) {
    const Window w = window(step, first_sample + j);
    sources_[w.source].corpus.read(w.start, seq_len_ + 1, window_tokens.data());
    for (int i = 0; i < seq_len_; ++i) {
      tokens[static_cast<size_t>(i) * b + j] = window_tokens[i];
      targets[static_cast<size_t>(i) * b + j] = window_tokens[i + 1];
    }
  }
}

}  // namespace ptdp
