// Deterministic sampling: the global batch of a step is the same however it is cut into
// data-parallel ranks and microbatches; training never reads the validation tail.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "data/batch_sampler.hpp"
#include "data/token_file_writer.hpp"
#include "ptdp/error.hpp"
#include "scratch_dir.hpp"

namespace ptdp {
namespace {

using test::ScratchDir;

// Token i of the file is i, so every sampled token says where in the file it came from.
class BatchSamplerTest : public ::testing::Test {
 protected:
  static constexpr int64_t kTokens = 10000;
  static constexpr int kSeqLen = 16;
  void SetUp() override {
    std::vector<int32_t> tokens(kTokens);
    std::iota(tokens.begin(), tokens.end(), 0);
    path_ = dir_.file("positions.bin");
    write_token_file(path_, tokens, TokenDType::I32);
  }
  TokenDataset dataset() const { return TokenDataset::open(path_); }

  ScratchDir dir_;
  std::string path_;
};

using Sequence = std::vector<int32_t>;  // tokens then targets

// The global batch of `step` as d data-parallel ranks with microbatches of b would load it:
// rank r takes samples [r·B/d, (r+1)·B/d), microbatch k of it starts at r·B/d + k·b.
std::map<int64_t, Sequence> global_batch(const BatchSampler& sampler, int64_t step, int B, int d, int b) {
  std::map<int64_t, Sequence> batch;
  const int s = sampler.seq_len();
  const int per_rank = B / d;
  for (int rank = 0; rank < d; ++rank)
    for (int k = 0; k < per_rank / b; ++k) {
      const int64_t first = static_cast<int64_t>(rank) * per_rank + static_cast<int64_t>(k) * b;
      std::vector<int32_t> tokens(static_cast<size_t>(s) * b), targets(tokens.size());
      sampler.microbatch(step, first, b, tokens.data(), targets.data());
      for (int j = 0; j < b; ++j) {
        Sequence& seq = batch[first + j];
        EXPECT_TRUE(seq.empty()) << "sample " << first + j << " loaded twice";
        for (int i = 0; i < s; ++i) seq.push_back(tokens[static_cast<size_t>(i) * b + j]);
        for (int i = 0; i < s; ++i) seq.push_back(targets[static_cast<size_t>(i) * b + j]);
      }
    }
  return batch;
}

TEST_F(BatchSamplerTest, SequenceIsAWindowAndTargetsAreShiftedByOne) {
  BatchSampler sampler(dataset(), kSeqLen, 7, Split::Train, 0.1);
  std::vector<int32_t> tokens(kSeqLen), targets(kSeqLen);
  for (int64_t g = 0; g < 20; ++g) {
    sampler.sample(3, g, tokens.data(), targets.data());
    const int64_t start = sampler.window_start(3, g);
    for (int i = 0; i < kSeqLen; ++i) {
      EXPECT_EQ(tokens[i], start + i);
      EXPECT_EQ(targets[i], start + i + 1);
    }
  }
}

TEST_F(BatchSamplerTest, MicrobatchIsTimeMajor) {
  BatchSampler sampler(dataset(), kSeqLen, 7, Split::Train, 0.1);
  const int b = 3;
  std::vector<int32_t> tokens(kSeqLen * b), targets(kSeqLen * b);
  sampler.microbatch(5, 10, b, tokens.data(), targets.data());
  for (int j = 0; j < b; ++j) {
    const int64_t start = sampler.window_start(5, 10 + j);
    for (int i = 0; i < kSeqLen; ++i) {
      EXPECT_EQ(tokens[i * b + j], start + i) << "position " << i << ", column " << j;
      EXPECT_EQ(targets[i * b + j], start + i + 1);
    }
  }
}

TEST_F(BatchSamplerTest, GlobalBatchIsTheSameUnderEveryLayout) {
  BatchSampler sampler(dataset(), kSeqLen, 1234, Split::Train, 0.05);
  const int B = 8;
  for (int64_t step = 0; step < 5; ++step) {
    const auto reference = global_batch(sampler, step, B, 1, 8);
    ASSERT_EQ(reference.size(), 8u);
    for (auto [d, b] : {std::pair{2, 2}, {2, 4}, {4, 1}, {8, 1}, {1, 1}, {4, 2}})
      EXPECT_EQ(global_batch(sampler, step, B, d, b), reference) << "d=" << d << " b=" << b;
    // A sampler built anew (another process) draws the same batch.
    BatchSampler again(dataset(), kSeqLen, 1234, Split::Train, 0.05);
    EXPECT_EQ(global_batch(again, step, B, 2, 2), reference);
  }
}

TEST_F(BatchSamplerTest, StepsSamplesAndSeedsDrawDifferentWindows) {
  BatchSampler sampler(dataset(), kSeqLen, 1234, Split::Train, 0.05);
  BatchSampler other_seed(dataset(), kSeqLen, 1235, Split::Train, 0.05);
  std::vector<int64_t> step0, step1, seed2;
  for (int64_t g = 0; g < 32; ++g) {
    step0.push_back(sampler.window_start(0, g));
    step1.push_back(sampler.window_start(1, g));
    seed2.push_back(other_seed.window_start(0, g));
  }
  EXPECT_NE(step0, step1);
  EXPECT_NE(step0, seed2);
  std::sort(step0.begin(), step0.end());
  EXPECT_GT(std::unique(step0.begin(), step0.end()) - step0.begin(), 28);  // 32 draws of ~9500
}

TEST_F(BatchSamplerTest, TrainingNeverTouchesTheValidationTail) {
  const double val_fraction = 0.1;
  BatchSampler train(dataset(), kSeqLen, 99, Split::Train, val_fraction);
  BatchSampler validation(dataset(), kSeqLen, 99, Split::Validation, val_fraction);
  EXPECT_EQ(train.split_begin(), 0);
  EXPECT_EQ(train.split_end(), 9000);
  EXPECT_EQ(validation.split_begin(), 9000);
  EXPECT_EQ(validation.split_end(), kTokens);

  std::vector<int32_t> tokens(kSeqLen), targets(kSeqLen);
  int32_t train_lowest = kTokens, train_highest = 0, val_lowest = kTokens, val_highest = 0;
  for (int64_t step = 0; step < 200; ++step)
    for (int64_t g = 0; g < 16; ++g) {
      train.sample(step, g, tokens.data(), targets.data());
      train_lowest = std::min(train_lowest, tokens.front());
      train_highest = std::max(train_highest, targets.back());
      validation.sample(step, g, tokens.data(), targets.data());
      val_lowest = std::min(val_lowest, tokens.front());
      val_highest = std::max(val_highest, targets.back());
    }
  EXPECT_LT(train_highest, 9000);
  EXPECT_GE(val_lowest, 9000);
  EXPECT_LT(val_highest, kTokens);
  // Windows reach both ends of each split, so neither is sampled from a corner.
  EXPECT_LT(train_lowest, 100);
  EXPECT_GT(train_highest, 8900);
  EXPECT_LT(val_lowest, 9100);
  EXPECT_GT(val_highest, 9900);
}

TEST_F(BatchSamplerTest, ValidationBatchesAreFixedSets) {
  BatchSampler validation(dataset(), kSeqLen, 99, Split::Validation, 0.1);
  BatchSampler later(dataset(), kSeqLen, 99, Split::Validation, 0.1);
  const auto batch0 = global_batch(validation, 0, 8, 1, 8);
  EXPECT_EQ(global_batch(later, 0, 8, 2, 4), batch0);  // evaluated again, in another layout
  EXPECT_NE(global_batch(validation, 1, 8, 1, 8), batch0);
  // Validation windows are drawn apart from training windows of the same index.
  BatchSampler train(dataset(), kSeqLen, 99, Split::Train, 0.1);
  EXPECT_NE(validation.window_start(0, 0) - validation.split_begin(), train.window_start(0, 0));
}

TEST_F(BatchSamplerTest, ShortSplitsFailNamingFileAndSizes) {
  auto message = [&](int seq_len, Split split, double val_fraction) {
    try {
      BatchSampler sampler(dataset(), seq_len, 1, split, val_fraction);
      (void)sampler;
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(16, Split::Validation, 0.001),
            path_ + ": the validation split has 10 tokens (training 9990, validation 10 of 10000), "
                    "fewer than seq_len + 1 = 17");
  EXPECT_EQ(message(9990, Split::Train, 0.001),
            path_ + ": the training split has 9990 tokens (training 9990, validation 10 of 10000), "
                    "fewer than seq_len + 1 = 9991");
  EXPECT_EQ(message(9989, Split::Train, 0.001), "");  // exactly seq_len + 1 tokens: one window
  EXPECT_EQ(message(16, Split::Validation, 0.0), path_ + ": no validation split: data.val_fraction is 0");
  EXPECT_NE(message(16, Split::Train, 1.0).find("data.val_fraction must be in [0, 1)"), std::string::npos);
  EXPECT_NE(message(0, Split::Train, 0.1).find("seq_len must be positive"), std::string::npos);
}

// Shards are read as one sequence: cut into three files, the data give the batches of the whole file.
TEST_F(BatchSamplerTest, ShardsDrawTheWindowsOfTheFileTheyCutUp) {
  std::vector<TokenDataset> shards;
  for (auto [first, last] : {std::pair{0, 2500}, {2500, 2501}, {2501, 10000}}) {
    std::vector<int32_t> tokens(last - first);
    std::iota(tokens.begin(), tokens.end(), first);
    const std::string path = dir_.file("shard_" + std::to_string(first) + ".bin");
    write_token_file(path, tokens, TokenDType::I32);
    shards.push_back(TokenDataset::open(path));
  }
  BatchSampler whole_file(dataset(), kSeqLen, 1234, Split::Train, 0.05);
  BatchSampler sharded({SamplerSource{TokenCorpus(shards)}}, kSeqLen, 1234, Split::Train, 0.05);
  for (int64_t step : {0, 1, 17}) EXPECT_EQ(global_batch(sharded, step, 32, 1, 32), global_batch(whole_file, step, 32, 4, 2));
}

class BlendTest : public BatchSamplerTest {
 protected:
  // Source 0 holds tokens 0.., source 1 tokens 100000..: every token says which source it is from.
  std::vector<SamplerSource> blend(double weight0, double weight1) {
    std::vector<int32_t> tokens(kTokens);
    std::iota(tokens.begin(), tokens.end(), 100000);
    const std::string other = dir_.file("other.bin");
    write_token_file(other, tokens, TokenDType::I32);
    return {{TokenCorpus({dataset()}), weight0}, {TokenCorpus({TokenDataset::open(other)}), weight1}};
  }
};

TEST_F(BlendTest, SourcesAreDrawnInProportionToTheirWeights) {
  const BatchSampler sampler(blend(3, 1), kSeqLen, 42, Split::Train, 0.1);
  int from_first = 0;
  const int samples = 20000;
  for (int g = 0; g < samples; ++g) {
    Sequence seq(2 * kSeqLen);
    sampler.sample(g / 100, g % 100, seq.data(), seq.data() + kSeqLen);
    const bool first = seq.front() < 100000;
    for (int32_t token : seq) EXPECT_EQ(token < 100000, first) << "a window mixes two sources";
    from_first += first;
  }
  // Binomial(20000, 0.75) has a standard deviation of 61; 0.75 ± 0.015 is ± 5 of them.
  EXPECT_NEAR(static_cast<double>(from_first) / samples, 0.75, 0.015);
}

TEST_F(BlendTest, GlobalBatchIsTheSameUnderEveryLayoutAndEachSourceKeepsItsValidationTail) {
  const BatchSampler train(blend(1, 2), kSeqLen, 7, Split::Train, 0.1);
  const auto batch = global_batch(train, 3, 64, 1, 64);
  for (auto [d, b] : {std::pair{2, 4}, {4, 1}, {8, 8}}) EXPECT_EQ(global_batch(train, 3, 64, d, b), batch);
  for (int64_t step = 0; step < 50; ++step)
    for (const auto& [g, seq] : global_batch(train, step, 64, 1, 64))
      for (int32_t token : seq) EXPECT_LT(token % 100000, 9000) << "step " << step << " sample " << g;
  const BatchSampler validation(blend(1, 2), kSeqLen, 7, Split::Validation, 0.1);
  for (const auto& [g, seq] : global_batch(validation, 0, 64, 1, 64))
    for (int32_t token : seq) EXPECT_GE(token % 100000, 9000) << "sample " << g;
}

TEST_F(BatchSamplerTest, WholeSetNeedsOneSequence) {
  const TokenCorpus corpus({dataset()});
  EXPECT_EQ(BatchSampler::whole({{corpus}}, kSeqLen, 1, Split::Validation).split_end(), kTokens);
  try {
    BatchSampler::whole({{corpus}}, kTokens, 1, Split::Validation);
    FAIL() << "a set of " << kTokens << " tokens has no window of " << kTokens + 1;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path_ + ": the validation set has 10000 tokens, fewer than seq_len + 1 = 10001");
  }
}

TEST_F(BatchSamplerTest, WholeFileTrainsWithoutValidation) {
  BatchSampler train(dataset(), kSeqLen, 5, Split::Train, 0.0);
  EXPECT_EQ(train.split_end(), kTokens);
}

}  // namespace
}  // namespace ptdp
