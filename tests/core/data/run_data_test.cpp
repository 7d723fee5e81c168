// The data a manifest names: lists and globs of shards, a blend, a separate validation set, and
// the one line each kind of bad input gets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "data/run_data.hpp"
#include "data/token_file_writer.hpp"
#include "ptdp/error.hpp"
#include "scratch_dir.hpp"

namespace ptdp {
namespace {

using test::ScratchDir;
using ::testing::HasSubstr;

class RunDataTest : public ::testing::Test {
 protected:
  // A ptdp file of tokens first .. first + count - 1.
  std::string shard(const std::string& name, int32_t first, int32_t count) {
    std::vector<int32_t> tokens(count);
    std::iota(tokens.begin(), tokens.end(), first);
    const std::string path = dir_.file(name);
    write_token_file(path, tokens, TokenDType::I32);
    return path;
  }
  RunConfig config(std::vector<std::string> path, std::vector<std::string> val_path = {}) {
    RunConfig c;
    c.source = "run.toml";
    c.model.vocab = 1 << 20;
    c.data.path = std::move(path);
    c.data.val_path = std::move(val_path);
    return c;
  }
  std::string open_error(const RunConfig& c) {
    try {
      RunData::open(c);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    return "";
  }

  ScratchDir dir_;
};

TEST_F(RunDataTest, AGlobNamesItsShardsInOrderAndAListConcatenates) {
  shard("train_000002.bin", 200, 100);
  shard("train_000001.bin", 100, 100);
  shard("train_000000.bin", 0, 100);
  const std::string extra = shard("extra.bin", 300, 50);
  const RunData data = RunData::open(config({dir_.file("train_*.bin"), extra}));
  ASSERT_EQ(data.train.size(), 1u);
  const TokenCorpus& corpus = data.train[0].corpus;
  ASSERT_EQ(corpus.files().size(), 4u);
  EXPECT_EQ(corpus.name(), dir_.file("train_000000.bin") + " and 3 more files");
  EXPECT_EQ(corpus.size(), 350);
  std::vector<int32_t> tokens(350);
  corpus.read(0, 350, tokens.data());
  for (int32_t i = 0; i < 350; ++i) ASSERT_EQ(tokens[i], i);
}

TEST_F(RunDataTest, WeightsMakeOneSourcePerEntry) {
  shard("web_0.bin", 0, 100);
  shard("web_1.bin", 100, 100);
  const std::string books = shard("books.bin", 5000, 100);
  RunConfig c = config({dir_.file("web_*.bin"), books});
  c.data.weights = {0.7, 0.3};
  const RunData data = RunData::open(c);
  ASSERT_EQ(data.train.size(), 2u);
  EXPECT_EQ(data.train[0].corpus.size(), 200);
  EXPECT_EQ(data.train[0].weight, 0.7);
  EXPECT_EQ(data.train[1].corpus.name(), books);
}

TEST_F(RunDataTest, ASeparateValidationSetLeavesAllOfTheTrainingDataToTraining) {
  const std::string train = shard("train.bin", 0, 1000);
  const std::string val = shard("val.bin", 50000, 100);
  const RunData data = RunData::open(config({train}, {val}));
  const BatchSampler training = data.training(16, 1, 0.5);
  EXPECT_EQ(training.split_begin(), 0);
  EXPECT_EQ(training.split_end(), 1000);
  const BatchSampler validation = data.validation_batches(16, 1, 0.5);
  std::vector<int32_t> tokens(16), targets(16);
  for (int g = 0; g < 64; ++g) {
    validation.sample(0, g, tokens.data(), targets.data());
    for (int32_t token : tokens) EXPECT_GE(token, 50000);
  }
}

TEST_F(RunDataTest, AValidationSetShorterThanOneSequenceIsNamed) {
  const std::string val = shard("val.bin", 0, 10);
  const RunData data = RunData::open(config({shard("train.bin", 0, 1000)}, {val}));
  try {
    data.validation_batches(16, 1, 0.05);
    FAIL() << "10 tokens hold no window of 17";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), val + ": the validation set has 10 tokens, fewer than seq_len + 1 = 17");
  }
}

TEST_F(RunDataTest, AGlobThatMatchesNothingIsRefused) {
  const std::string train = shard("train.bin", 0, 1000);
  EXPECT_EQ(open_error(config({train, dir_.file("fineweb_train_*.bin")})),
            "run.toml: data.path[1]: \"" + dir_.file("fineweb_train_*.bin") + "\" matches no file");
  EXPECT_EQ(open_error(config({train}, {dir_.file("fineweb_val_*.bin")})),
            "run.toml: data.val_path[0]: \"" + dir_.file("fineweb_val_*.bin") + "\" matches no file");
}

TEST_F(RunDataTest, FilesOfDifferentFormatsAreRefused) {
  const std::string tokens = shard("tokens.bin", 0, 1000);
  const std::string text = dir_.file("notes.txt");
  test::write_bytes(text, {'h', 'i', '\n'});
  EXPECT_EQ(open_error(config({tokens, text})),
            text + ": a text file, but " + tokens + " is a ptdp file: the files of one run's data must share one format");
  EXPECT_THAT(open_error(config({tokens}, {text})), HasSubstr(text + ": a text file, but " + tokens));
  RunConfig blend = config({tokens, text});
  blend.data.weights = {1, 1};
  EXPECT_THAT(open_error(blend), HasSubstr(text + ": a text file, but " + tokens));
}

TEST_F(RunDataTest, ATokenBeyondTheVocabularyIsNamedWithItsFile) {
  shard("a_0.bin", 0, 100);
  const std::string wide = shard("a_1.bin", 1000, 100);
  RunConfig c = config({dir_.file("a_*.bin")});
  c.model.vocab = 500;
  EXPECT_THAT(open_error(c), HasSubstr(wide + ": token 1099 at index 99 does not fit the model's vocabulary of 500"));
  EXPECT_EQ(open_error(config({})), "run.toml: data.path is not set: the manifest names no training data");
}

}  // namespace
}  // namespace ptdp
