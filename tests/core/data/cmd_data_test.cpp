// ptdp-host data encode / info, run as a user would.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "data/token_dataset.hpp"
#include "data/token_file_writer.hpp"
#include "scratch_dir.hpp"
#include "support/host_command.hpp"

namespace ptdp {
namespace {

using test::read_bytes;
using test::ScratchDir;
using test::write_bytes;

using test::HostResult;
using test::quoted;

HostResult run_host(const std::string& args) { return test::run_host_command(PTDP_TEST_HOST, args); }

std::vector<uint8_t> text_bytes(const std::string& text) { return {text.begin(), text.end()}; }

TEST(HostDataCommand, EncodeThenInfo) {
  ScratchDir dir;
  const std::string text = dir.file("book.txt"), out = dir.file("book.bin");
  std::string content;
  for (int i = 0; i < 100; ++i) content += "hello world\n";
  write_bytes(text, text_bytes(content));

  HostResult encode = run_host("data encode " + quoted(text) + " " + quoted(out));
  ASSERT_EQ(encode.exit_code, 0) << encode.output;
  EXPECT_NE(encode.output.find("1200 tokens (u8"), std::string::npos) << encode.output;

  auto dataset = TokenDataset::open(out);
  EXPECT_EQ(dataset.format(), TokenFileFormat::Ptdp);
  ASSERT_EQ(dataset.size(), 1200);
  for (int64_t i = 0; i < dataset.size(); ++i)
    ASSERT_EQ(dataset.token(i), static_cast<uint8_t>(content[static_cast<size_t>(i)]));

  HostResult info = run_host("data info " + quoted(out));
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("format   ptdp\n"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("dtype    u8\n"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("tokens   1200\n"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("max      119 "), std::string::npos) << info.output;  // 'w'

  HostResult text_info = run_host("data info " + quoted(text));
  ASSERT_EQ(text_info.exit_code, 0) << text_info.output;
  EXPECT_NE(text_info.output.find("format   text\n"), std::string::npos) << text_info.output;
}

TEST(HostDataCommand, EncodeWithAWiderDtype) {
  ScratchDir dir;
  const std::string text = dir.file("a.txt"), out = dir.file("a.bin");
  write_bytes(text, text_bytes("abc"));
  ASSERT_EQ(run_host("data encode --dtype u16 " + quoted(text) + " " + quoted(out)).exit_code, 0);
  HostResult info = run_host("data info " + quoted(out));
  EXPECT_NE(info.output.find("dtype    u16\n"), std::string::npos) << info.output;
  EXPECT_EQ(read_bytes(out).size(), 24u + 3 * 2);

  HostResult bad = run_host("data encode --dtype f32 " + quoted(text) + " " + quoted(out));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--dtype: unknown dtype 'f32'"), std::string::npos) << bad.output;
}

TEST(HostDataCommand, FailedEncodeKeepsAnExistingOut) {
  ScratchDir dir;
  const std::string text = dir.file("book.txt"), out = dir.file("book.bin");
  write_bytes(text, text_bytes("first version"));
  ASSERT_EQ(run_host("data encode " + quoted(text) + " " + quoted(out)).exit_code, 0);
  const auto good = read_bytes(out);

  HostResult missing = run_host("data encode " + quoted(dir.file("absent.txt")) + " " + quoted(out));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find(dir.file("absent.txt") + ": cannot open"), std::string::npos) << missing.output;
  EXPECT_EQ(read_bytes(out), good);

  write_bytes(text, text_bytes("second version"));
  std::filesystem::create_directory(out + ".tmp");
  HostResult blocked = run_host("data encode " + quoted(text) + " " + quoted(out));
  EXPECT_EQ(blocked.exit_code, 1);
  EXPECT_NE(blocked.output.find("cannot create " + out + ".tmp"), std::string::npos) << blocked.output;
  EXPECT_EQ(read_bytes(out), good);
  EXPECT_EQ(TokenDataset::open(out).size(), 13);  // "first version"
}

// An output that is one of the inputs, or a folder, is refused before anything is written, and
// the inputs are left as they were; a refused tokenizer leaves no temporary file behind.
TEST(HostDataCommand, AnOutputThatIsAnInputOrAFolderIsRefusedAndNothingIsLost) {
  ScratchDir dir;
  const std::string text = dir.file("book.txt");
  std::string content;
  for (int i = 0; i < 300; ++i) content += "the quick brown fox " + std::to_string(i) + "\n";
  write_bytes(text, text_bytes(content));
  const std::string same_by_another_name = dir.path() + "/./book.txt";

  HostResult encode = run_host("data encode " + quoted(text) + " " + quoted(same_by_another_name));
  EXPECT_NE(encode.exit_code, 0);
  EXPECT_NE(encode.output.find("is also an input (" + text + "): writing it would replace what is read"),
            std::string::npos)
      << encode.output;
  EXPECT_EQ(read_bytes(text), text_bytes(content));

  HostResult train = run_host("data tokenizer train " + quoted(text) + " --vocab 300 --out " + quoted(text));
  EXPECT_NE(train.exit_code, 0);
  EXPECT_NE(train.output.find("is also an input"), std::string::npos) << train.output;
  EXPECT_EQ(read_bytes(text), text_bytes(content));

  HostResult into_folder = run_host("data tokenizer train " + quoted(text) + " --vocab 300 --out " + quoted(dir.path()));
  EXPECT_NE(into_folder.exit_code, 0);
  EXPECT_NE(into_folder.output.find(dir.path() + ": is a folder; give the file to write"), std::string::npos)
      << into_folder.output;

  const std::string model = dir.file("t.model");
  ASSERT_EQ(run_host("data tokenizer train " + quoted(text) + " --vocab 300 --out " + quoted(model)).exit_code, 0);
  const std::vector<uint8_t> model_bytes = read_bytes(model);
  HostResult over_tokenizer =
      run_host("data encode " + quoted(text) + " " + quoted(model) + " --tokenizer " + quoted(model));
  EXPECT_NE(over_tokenizer.exit_code, 0);
  EXPECT_NE(over_tokenizer.output.find("is also an input (" + model + ")"), std::string::npos) << over_tokenizer.output;
  EXPECT_EQ(read_bytes(model), model_bytes);

  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"book.txt", "t.model"})) << "a temporary file was left behind";
}

// Values that mean nothing are refused by the command line, naming the option.
TEST(HostDataCommand, MeaninglessCountsAreRefused) {
  ScratchDir dir;
  const std::string text = dir.file("book.txt");
  write_bytes(text, text_bytes("hello\n"));
  for (const std::string option : {"--shard-tokens 0", "--shard-tokens -1", "--val-tokens -5", "--workers -1"}) {
    HostResult r = run_host("data encode " + quoted(text) + " " + quoted(dir.file("out.bin")) + " " + option);
    EXPECT_NE(r.exit_code, 0) << option;
    EXPECT_NE(r.output.find(option.substr(0, option.find(' '))), std::string::npos) << option << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.bin"))) << option;
  }
}

TEST(HostDataCommand, InfoOnAMalformedFileIsOneLine) {
  ScratchDir dir;
  const std::string path = dir.file("broken.bin");
  std::vector<uint8_t> bytes = text_bytes(std::string("PTDPTOK") + '\0');
  bytes.resize(24, 0);
  bytes[8] = 1;   // version 1
  bytes[12] = 1;  // u8
  bytes[16] = 50; // 50 tokens, none present
  write_bytes(path, bytes);
  HostResult info = run_host("data info " + quoted(path));
  EXPECT_EQ(info.exit_code, 1);
  EXPECT_NE(info.output.find(path + ": truncated ptdp token file"), std::string::npos) << info.output;
  EXPECT_EQ(std::count(info.output.begin(), info.output.end(), '\n'), 1) << info.output;
}

// A version 2 file that records a byte-level tokenizer (vocabulary 256) yet holds token 300: data
// info and a run (through validate, which reads the data as a run does) refuse it in one line.
TEST(HostDataCommand, ATokenOutsideTheFilesRecordedVocabularyIsRefusedByInfoAndRun) {
  ScratchDir dir;
  const std::string path = dir.file("tokens.bin");
  {
    TokenFileWriter writer(path, TokenFileLayout::PtdpIndexed, TokenDType::U16, TokenizerRecord::bytes());
    const std::vector<int32_t> tokens = {65, 66, 300, 67};
    writer.add_document(tokens);
    writer.finish();
    writer.commit();
  }
  const std::string reason = path + ": token 300 at index 2 is outside the vocabulary of 256 ids the file records "
                                    "(byte-level (vocab 256)): the file is damaged or its tokens come from another tokenizer";
  HostResult info = run_host("data info " + quoted(path));
  EXPECT_EQ(info.exit_code, 1) << info.output;
  EXPECT_NE(info.output.find(reason), std::string::npos) << info.output;
  EXPECT_EQ(std::count(info.output.begin(), info.output.end(), '\n'), 1) << info.output;

  const std::string manifest = dir.file("m.toml");
  write_bytes(manifest, text_bytes("[model]\nlayers = 2\nhidden = 16\nheads = 2\nseq_len = 2\nvocab = 512\n"
                                   "[data]\npath = \"tokens.bin\"\n[plugins]\nkernels = \"kernels-ref\"\n"
                                   "scheduler = \"sched-1f1b\"\nsearch_path = [\"" PTDP_TEST_PLUGIN_DIR "\"]\n"));
  HostResult validate = run_host("validate " + quoted(manifest));
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_NE(validate.output.find(reason), std::string::npos) << validate.output;
  HostResult run = run_host("run " + quoted(manifest));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find(reason), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("step 1"), std::string::npos) << run.output;
}

TEST(HostDataCommand, TrainATokenizerThenEncodeJsonlIntoShardsAndAValidationFile) {
  ScratchDir dir;
  const std::string model = dir.file("tok.model");
  HostResult train = run_host("data tokenizer train " + quoted(std::string(PTDP_SOURCE_DIR) + "/data/corpus.txt") +
                              " --vocab 400 --type unigram --out " + quoted(model));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find(model + ": sentencepiece tok.model (vocab 400, end of document 2, sha256 "),
            std::string::npos)
      << train.output;

  std::string jsonl;
  for (int i = 0; i < 200; ++i) jsonl += "{\"text\": \"And God said, Let there be light " + std::to_string(i) + "\"}\n";
  const std::string input = dir.file("docs.jsonl");
  write_bytes(input, text_bytes(jsonl));
  HostResult encode = run_host("data encode " + quoted(input) + " " + quoted(dir.file("light.bin")) + " --tokenizer " +
                               quoted(model) + " --shard-tokens 1000 --val-tokens 300 --workers 2");
  ASSERT_EQ(encode.exit_code, 0) << encode.output;
  EXPECT_NE(encode.output.find(dir.file("light_val.bin") + ": "), std::string::npos) << encode.output;
  EXPECT_NE(encode.output.find(" 200 documents in "), std::string::npos) << encode.output;

  HostResult info = run_host("data info " + quoted(dir.file("light_train_*.bin")));
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("file     " + dir.file("light_train_000001.bin") + "\n"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("made by  sentencepiece tok.model (vocab 400, end of document 2"), std::string::npos)
      << info.output;
  EXPECT_NE(info.output.find("docs     "), std::string::npos) << info.output;
}

TEST(HostDataCommand, TokenizersItCannotUseAreOneLine) {
  ScratchDir dir;
  const std::string text = dir.file("a.txt");
  write_bytes(text, text_bytes("abc"));
  HostResult small = run_host("data tokenizer train " + quoted(text) + " --vocab 100 --out " + quoted(dir.file("t.model")));
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.output.find("--vocab 100: a vocabulary needs room for 4 special pieces and 256 bytes"),
            std::string::npos)
      << small.output;
  const std::string hf = dir.file("tokenizer.json");
  write_bytes(hf, text_bytes("{}"));
  HostResult json = run_host("data encode " + quoted(text) + " " + quoted(dir.file("a.bin")) + " --tokenizer " + quoted(hf));
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_NE(json.output.find(hf + ": a Hugging Face tokenizer; encode with it through scripts/encode_hf.py"),
            std::string::npos)
      << json.output;
  HostResult garbage = run_host("data encode " + quoted(text) + " " + quoted(dir.file("a.bin")) + " --tokenizer " + quoted(text));
  EXPECT_EQ(garbage.exit_code, 1);
  EXPECT_NE(garbage.output.find(text + ": not a SentencePiece model"), std::string::npos) << garbage.output;
  for (const HostResult* r : {&small, &json, &garbage})
    EXPECT_EQ(std::count(r->output.begin(), r->output.end(), '\n'), 1) << r->output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.bin")));
}

TEST(HostDataCommand, ShippedCorpusReadsAsText) {
  HostResult info = run_host("data info " + quoted(std::string(PTDP_SOURCE_DIR) + "/data/corpus.txt"));
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("format   text\n"), std::string::npos) << info.output;
  auto corpus = TokenDataset::open(std::string(PTDP_SOURCE_DIR) + "/data/corpus.txt");
  EXPECT_GT(corpus.size(), 300000);
  EXPECT_LE(corpus.size(), 2 * 1024 * 1024);
  EXPECT_NO_THROW(corpus.check_vocab(256));
}

}  // namespace
}  // namespace ptdp
