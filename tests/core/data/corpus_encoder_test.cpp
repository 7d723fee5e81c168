// Encoding a corpus: documents from text, JSONL and folders, the end-of-document token, shards
// at document boundaries, a validation file, llm.c's format, threads that change nothing, and
// the one line each kind of bad input gets, with nothing written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "data/corpus_encoder.hpp"
#include "data/run_data.hpp"
#include "data/token_dataset.hpp"
#include "ptdp/error.hpp"
#include "scratch_dir.hpp"

namespace ptdp {
namespace {

using test::read_bytes;
using test::ScratchDir;
using test::write_bytes;
using ::testing::HasSubstr;

const std::string kCorpus = std::string(PTDP_SOURCE_DIR) + "/data/corpus.txt";

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<int32_t> tokens_of(const std::string& path) {
  const TokenDataset dataset = TokenDataset::open(path);
  std::vector<int32_t> tokens(static_cast<size_t>(dataset.size()));
  dataset.read(0, dataset.size(), tokens.data());
  return tokens;
}

// A SentencePiece vocabulary trained once on the shipped corpus: what the tests encode with.
class CorpusEncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new ScratchDir();
    train_sentencepiece(list_text_inputs({kCorpus}), "text", 512, "bpe", model_dir_->file("tok.model"));
  }
  static void TearDownTestSuite() { delete model_dir_; }
  static std::string model() { return model_dir_->file("tok.model"); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_.file(name);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_bytes(path, bytes_of(text));
    return path;
  }
  std::vector<EncodedFile> encode(const std::vector<std::string>& inputs, const Tokenizer& tokenizer,
                                  CorpusEncoding encoding) {
    if (encoding.out.empty()) encoding.out = dir_.file("out.bin");
    return encode_corpus(list_text_inputs(inputs), tokenizer, encoding, nullptr);
  }
  std::string encode_error(const std::vector<std::string>& inputs, const Tokenizer& tokenizer,
                           CorpusEncoding encoding = {}) {
    try {
      encode(inputs, tokenizer, encoding);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    return "";
  }
  // No file of the output's folder was created: neither a token file nor a leftover ".tmp".
  void expect_nothing_written() {
    for (const auto& entry : std::filesystem::directory_iterator(dir_.file("")))
      EXPECT_EQ(entry.path().extension() == ".bin" || entry.path().extension() == ".tmp", false) << entry.path();
  }

  static ScratchDir* model_dir_;
  ScratchDir dir_;
};
ScratchDir* CorpusEncoderTest::model_dir_ = nullptr;

TEST_F(CorpusEncoderTest, TheTrainedVocabularyRoundTripsTheCorpus) {
  const auto tokenizer = open_tokenizer(model());
  EXPECT_EQ(tokenizer->record().kind, "sentencepiece");
  EXPECT_EQ(tokenizer->record().vocab, 512);
  EXPECT_EQ(tokenizer->record().eod, 2);  // </s>
  const std::string text = "  1 In the beginning God created the heaven and the earth.\n\n  Zebulun's ½ café.";
  std::vector<int32_t> tokens;
  tokenizer->encode(text, tokens);
  EXPECT_LT(tokens.size(), text.size() * 2 / 3) << "subwords: fewer tokens than bytes";
  EXPECT_EQ(tokenizer->decode(tokens), text);
}

TEST_F(CorpusEncoderTest, EachJsonlLineIsADocumentEndedByTheEndToken) {
  const std::string jsonl = write("docs.jsonl", "{\"text\": \"In the beginning\"}\n\n{\"id\": 2, \"text\": \"and the earth\"}\n");
  const auto tokenizer = open_tokenizer(model());
  const std::vector<EncodedFile> files = encode({jsonl}, *tokenizer, {});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].documents, 2);
  std::vector<int32_t> expected;
  tokenizer->encode("In the beginning", expected);
  expected.push_back(2);
  tokenizer->encode("and the earth", expected);
  expected.push_back(2);
  EXPECT_EQ(tokens_of(files[0].path), expected);
  const TokenDataset dataset = TokenDataset::open(files[0].path);
  EXPECT_EQ(dataset.documents(), 2);
  ASSERT_TRUE(dataset.tokenizer());
  EXPECT_TRUE(dataset.tokenizer()->same_tokenizer(tokenizer->record()));
  EXPECT_EQ(dataset.dtype(), TokenDType::U16);  // 512 ids need more than a byte
}

TEST_F(CorpusEncoderTest, AFolderIsItsFilesInNameOrderEachADocument) {
  write("books/b/2.txt", "second");
  write("books/a.txt", "first");
  write("books/c.jsonl", "{\"body\": \"third\"}\n{\"body\": \"fourth\"}\n");
  CorpusEncoding encoding;
  encoding.json_key = "body";
  const std::vector<EncodedFile> files = encode({dir_.file("books")}, *byte_tokenizer(), encoding);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].documents, 4);
  const std::vector<int32_t> tokens = tokens_of(files[0].path);
  EXPECT_EQ(std::string(tokens.begin(), tokens.end()), "firstsecondthirdfourth");  // bytes have no end token
  EXPECT_EQ(TokenDataset::open(files[0].path).tokenizer()->kind, "bytes");
}

TEST_F(CorpusEncoderTest, ShardsEndAtDocumentBoundariesAndTheFirstDocumentsValidate) {
  std::string jsonl;
  for (int i = 0; i < 40; ++i) jsonl += "{\"text\": \"document " + std::to_string(i) + " " + std::string(i % 7 * 5, 'x') + "\"}\n";
  const std::string input = write("docs.jsonl", jsonl);
  const auto tokenizer = open_tokenizer(model());
  const std::vector<EncodedFile> whole = encode({input}, *tokenizer, {.out = dir_.file("whole.bin")});
  CorpusEncoding sharded{.out = dir_.file("corpus.bin"), .shard_tokens = 60, .val_tokens = 50};
  const std::vector<EncodedFile> files = encode({input}, *tokenizer, sharded);
  ASSERT_GE(files.size(), 4u);
  EXPECT_EQ(files[0].path, dir_.file("corpus_val.bin"));
  EXPECT_GE(files[0].tokens, 50);
  std::vector<int32_t> joined;
  int64_t documents = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(files[i].path, dir_.file(fmt::format("corpus_train_{:06d}.bin", i - 1)));
      EXPECT_LE(files[i].tokens, 60) << files[i].path;
    }
    const std::vector<int32_t> tokens = tokens_of(files[i].path);
    EXPECT_EQ(tokens.back(), 2) << files[i].path << " ends inside a document";
    EXPECT_EQ(TokenDataset::open(files[i].path).documents(), files[i].documents);
    joined.insert(joined.end(), tokens.begin(), tokens.end());
    documents += files[i].documents;
  }
  EXPECT_EQ(joined, tokens_of(whole[0].path));
  EXPECT_EQ(documents, 40);
  // What the manifest names: a glob of the training shards and the validation file.
  RunConfig c;
  c.model.vocab = 512;
  c.data.path = {dir_.file("corpus_train_*.bin")};
  c.data.val_path = {dir_.file("corpus_val.bin")};
  const RunData data = RunData::open(c);
  EXPECT_EQ(data.train[0].corpus.files().size(), files.size() - 1);
  EXPECT_EQ(data.train[0].corpus.size() + data.validation->size(), whole[0].tokens);
}

TEST_F(CorpusEncoderTest, TheFilesDoNotDependOnHowManyThreadsTokenize) {
  std::string text;
  const std::vector<uint8_t> corpus = read_bytes(kCorpus);
  for (int i = 0; i < 3; ++i) text.append(corpus.begin(), corpus.end());  // several pieces of a mebibyte
  const std::string input = write("big.txt", text);
  const auto tokenizer = open_tokenizer(model());
  const auto one = encode({input, kCorpus}, *tokenizer, {.out = dir_.file("one.bin"), .workers = 1});
  const auto four = encode({input, kCorpus}, *tokenizer, {.out = dir_.file("four.bin"), .workers = 4});
  EXPECT_EQ(one[0].documents, 2);
  EXPECT_EQ(read_bytes(one[0].path), read_bytes(four[0].path));
}

TEST_F(CorpusEncoderTest, LlmcShardsReadBackAsLlmcShards) {
  const std::string input = write("a.txt", "In the beginning God created the heaven and the earth.");
  const auto tokenizer = open_tokenizer(model());
  const auto files = encode({input}, *tokenizer, {.out = "", .layout = TokenFileLayout::Llmc});
  const TokenDataset shard = TokenDataset::open(files[0].path);
  EXPECT_EQ(shard.format(), TokenFileFormat::Llmc);
  std::vector<int32_t> expected;
  tokenizer->encode("In the beginning God created the heaven and the earth.", expected);
  expected.push_back(2);
  EXPECT_EQ(tokens_of(files[0].path), expected);
}

TEST_F(CorpusEncoderTest, OneByteLevelTextFileIsAVersionOneFileOfItsBytes) {
  const std::string input = write("a.txt", "abc");
  const auto files = encode({input}, *byte_tokenizer(), {});
  EXPECT_EQ(read_bytes(files[0].path).size(), 24u + 3);
  EXPECT_FALSE(TokenDataset::open(files[0].path).tokenizer());
}

TEST_F(CorpusEncoderTest, BadInputIsOneLineAndWritesNothing) {
  const auto tokenizer = open_tokenizer(model());
  const std::string missing_key = write("a.jsonl", "{\"text\": \"fine\"}\n{\"body\": \"x\", \"id\": 3}\n");
  EXPECT_EQ(encode_error({missing_key}, *tokenizer),
            missing_key + ":2: no key \"text\" (this line has \"body\", \"id\"); choose one with --json-key");
  const std::string not_json = write("b.jsonl", "{\"text\": \"fine\"}\n{\"text\": \n");
  EXPECT_EQ(encode_error({not_json}, *tokenizer), not_json + ":2: not JSON (each line of a JSONL file is one JSON object)");
  const std::string number = write("c.jsonl", "{\"text\": 7}\n");
  EXPECT_EQ(encode_error({number}, *tokenizer), number + ":1: \"text\" is a number, not a string");
  const std::string latin1 = write("d.txt", "caf\xe9\nthe second line \xff\n");
  EXPECT_EQ(encode_error({latin1}, *tokenizer), latin1 + ":1: invalid UTF-8 (byte 0xe9 at offset 3)");
  const std::string bad_line = write("e.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"\xc3\x28\"}\n");
  EXPECT_EQ(encode_error({bad_line}, *tokenizer), bad_line + ":2: invalid UTF-8 (byte 0xc3 at offset 25)");
  EXPECT_EQ(encode_error({dir_.file("absent.txt")}, *tokenizer),
            dir_.file("absent.txt") + ": cannot open: No such file or directory");
  EXPECT_THAT(encode_error({kCorpus}, *tokenizer, {.out = "", .val_tokens = 1000}),
              HasSubstr("all 1 documents (" ));
  // The good input before the bad one leaves no shard behind either.
  EXPECT_THAT(encode_error({kCorpus, latin1}, *tokenizer, {.out = "", .shard_tokens = 1000}), HasSubstr("invalid UTF-8"));
  expect_nothing_written();
  // Byte-level tokens are any bytes: the same text encodes.
  EXPECT_EQ(encode_error({latin1}, *byte_tokenizer()), "");
}

TEST_F(CorpusEncoderTest, AFailedEncodeKeepsTheFileItWouldReplace) {
  const std::string out = write("out.bin", "precious");
  const std::string latin1 = write("d.txt", "caf\xe9");
  EXPECT_THAT(encode_error({latin1}, *open_tokenizer(model()), {.out = out}), HasSubstr("invalid UTF-8"));
  EXPECT_EQ(read_bytes(out), bytes_of("precious"));
}

TEST_F(CorpusEncoderTest, ARunRefusesATokenizerLargerThanTheModelAndTwoTokenizersInOneList) {
  const auto tokenizer = open_tokenizer(model());
  const std::string input = write("a.txt", "In the beginning God created the heaven and the earth.");
  const std::string subwords = encode({input}, *tokenizer, {.out = dir_.file("sp.bin")})[0].path;
  const std::string bytes = encode({input, input}, *byte_tokenizer(), {.out = dir_.file("bytes.bin")})[0].path;
  RunConfig c;
  c.source = "run.toml";
  c.model.vocab = 256;
  c.data.path = {subwords};
  try {
    RunData::open(c);
    FAIL() << "a 512-piece vocabulary does not fit model.vocab = 256";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(subwords + ": its tokens come from sentencepiece tok.model (vocab 512"));
    EXPECT_THAT(e.what(), HasSubstr("larger than the model's vocabulary of 256 (model.vocab must be at least 512)"));
  }
  c.model.vocab = 512;
  c.data.path = {subwords, bytes};
  try {
    RunData::open(c);
    FAIL() << "two tokenizers in one list";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(bytes + ": tokens of byte-level (vocab 256), but " + subwords +
                                    " holds tokens of sentencepiece tok.model"));
  }
}

}  // namespace
}  // namespace ptdp
