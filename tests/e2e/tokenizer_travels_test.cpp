// The tokenizer travels with the run: a model trained on SentencePiece tokens records its
// tokenizer in every step, `eval` encodes text with it and refuses tokens of another, `sample`
// takes and gives text through it, `export hf` writes it beside the weights, and a run whose
// data.tokenizer is not its data's is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "data/tokenizer.hpp"
#include "host_run.hpp"

namespace ptdp::test {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string quoted_setting(const std::string& key, const std::string& value) { return key + "=\"" + value + "\""; }

std::string loss_of(const CommandResult& r) {
  std::smatch m;
  static const std::regex line(R"(loss ([0-9.]+) \| perplexity)");
  return std::regex_search(r.output, m, line) ? m[1].str() : "";
}

class TokenizerTravels : public ::testing::Test {
 protected:
  TokenizerTravels() : dir(ws.dir() + "/ckpt"), model(ws.dir() + "/tok.model"), tokens(ws.dir() + "/corpus.bin") {
    made = run_host_command("data tokenizer train " + ws.dir() + "/corpus.txt --vocab 300 --out " + model +
                            " && " PTDP_TEST_HOST " data encode " + ws.dir() + "/corpus.txt " + tokens +
                            " --tokenizer " + model);
    if (made.exit_code == 0)
      trained = ws.run({"model.vocab=300", quoted_setting("data.path", tokens), quoted_setting("data.tokenizer", model),
                        "run.steps=2", "checkpoint.every=2", quoted_setting("checkpoint.dir", dir)},
                       1);
  }
  void SetUp() override {
    ASSERT_EQ(made.exit_code, 0) << made.output;
    ASSERT_EQ(trained.exit_code, 0) << trained.output;
  }
  CommandResult eval(const std::string& data) const { return run_host_command("eval " + dir + " --data " + data); }

  TinyGptWorkspace ws;
  const std::string dir, model, tokens;
  CommandResult made;
  HostRun trained;
};

TEST_F(TokenizerTravels, EveryStepHoldsTheTokenizerFile) {
  const nlohmann::json index = nlohmann::json::parse(read_text(dir + "/step-00000002/index.json"));
  const nlohmann::json& tokenizer = index["metadata"]["tokenizer"];
  EXPECT_EQ(tokenizer["kind"], "sentencepiece");
  EXPECT_EQ(tokenizer["name"], "tok.model");
  EXPECT_EQ(tokenizer["vocab"], 300);
  EXPECT_EQ(tokenizer["eod"], 2);
  EXPECT_EQ(tokenizer["sha256"], file_sha256(model));
  EXPECT_TRUE(tokenizer.contains("file_base64"));
}

TEST_F(TokenizerTravels, EvalEncodesTextWithTheStepsTokenizer) {
  const CommandResult text = eval(ws.dir() + "/corpus.txt"), encoded = eval(tokens);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  ASSERT_EQ(encoded.exit_code, 0) << encoded.output;
  EXPECT_NE(text.output.find("encoded with the step's tokenizer, sentencepiece tok.model (vocab 300"), std::string::npos)
      << text.output;
  EXPECT_NE(loss_of(text), "") << text.output;
  EXPECT_EQ(loss_of(text), loss_of(encoded)) << "the same tokens, the same loss";
}

TEST_F(TokenizerTravels, EvalRefusesTokensOfAnotherTokenizer) {
  const std::string bytes = ws.dir() + "/bytes.bin";
  const CommandResult encoded = run_host_command("data encode " + ws.dir() + "/corpus.txt " + ws.dir() + "/corpus.txt " + bytes);
  ASSERT_EQ(encoded.exit_code, 0) << encoded.output;
  const CommandResult r = eval(bytes);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(dir + " step 2: the model was trained on tokens of sentencepiece tok.model (vocab 300"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("and this run's data are tokens of byte-level (vocab 256)"), std::string::npos) << r.output;
}

TEST_F(TokenizerTravels, SampleTakesAndGivesTextThroughTheStepsTokenizer) {
  // stdout (the sample alone) to a file; the log still comes back on stderr.
  const std::string common = "{ " PTDP_TEST_HOST " sample " + dir + " --prompt 'In the beginning' --tokens 12 --seed 3";
  const CommandResult as_ids = run_shell(common + " --ids > " + ws.dir() + "/ids.txt; }");
  const CommandResult as_text = run_shell(common + " > " + ws.dir() + "/text.txt; }");
  ASSERT_EQ(as_ids.exit_code, 0) << as_ids.output;
  ASSERT_EQ(as_text.exit_code, 0) << as_text.output;
  std::vector<int32_t> ids;
  const auto tokenizer = open_tokenizer(model);
  tokenizer->encode("In the beginning", ids);
  const std::string prompt = tokenizer->decode(ids);
  const size_t prompt_tokens = ids.size();
  std::stringstream listed(read_text(ws.dir() + "/ids.txt"));
  for (std::string id; std::getline(listed, id, ',');) ids.push_back(std::stoi(id));
  ASSERT_EQ(ids.size(), prompt_tokens + 12) << "12 new token ids";
  const std::string text = read_text(ws.dir() + "/text.txt");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.substr(0, text.size() - 1), tokenizer->decode(ids).substr(prompt.size()))
      << "the text is the decoded continuation of the same draws";
}

TEST_F(TokenizerTravels, ExportWritesTheTokenizerBesideTheWeights) {
  const CommandResult r = run_host_command("export hf " + dir + " " + ws.dir() + "/hf");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("and its tokenizer (tokenizer.model, sentencepiece tok.model"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(ws.dir() + "/hf/tokenizer.model"), read_text(model));
  const nlohmann::json config = nlohmann::json::parse(read_text(ws.dir() + "/hf/tokenizer_config.json"));
  EXPECT_EQ(config["tokenizer_class"], "LlamaTokenizer");
  EXPECT_EQ(config["eos_token"], "</s>");
  EXPECT_EQ(config["add_bos_token"], false) << "ptdp's encoding adds no BOS";
}

// Hugging Face's AutoTokenizer.from_pretrained loads the exported folder (it found no tokenizer
// class for a bare tokenizer.model) and encodes text into the ids ptdp's tokenizer gives.
TEST_F(TokenizerTravels, AutoTokenizerLoadsTheExportAndEncodesAsPtdpDoes) {
  ASSERT_EQ(run_host_command("export hf " + dir + " " + ws.dir() + "/hf").exit_code, 0);
  const std::string text = "line 12: the quick brown fox jumps over the lazy dog 873";
  const CommandResult hf = run_shell(std::string("PYTHONPATH=") + PTDP_SOURCE_DIR "/.deps/python /usr/bin/python3 " +
                                     PTDP_SOURCE_DIR "/tests/e2e/hf_autotokenizer_ids.py " + ws.dir() + "/hf '" + text + "'");
  if (hf.exit_code == 3)
    GTEST_SKIP() << hf.output << " (scripts/setup.sh installs transformers, python3-sentencepiece and python3-protobuf)";
  ASSERT_EQ(hf.exit_code, 0) << hf.output;
  std::vector<int32_t> ids;
  open_tokenizer(model)->encode(text, ids);
  std::string expected;
  for (int32_t id : ids) expected += (expected.empty() ? "" : ",") + std::to_string(id);
  EXPECT_EQ(hf.output.substr(0, hf.output.find('\n')), expected) << hf.output;
}

TEST_F(TokenizerTravels, ARunRefusesADataTokenizerThatDidNotMakeItsData) {
  const std::string other = ws.dir() + "/other.model";
  ASSERT_EQ(run_host_command("data tokenizer train " + ws.dir() + "/corpus.txt --vocab 320 --out " + other).exit_code, 0);
  const HostRun r = ws.run({"model.vocab=300", quoted_setting("data.path", tokens), quoted_setting("data.tokenizer", other)}, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("data.tokenizer: " + other + " is sentencepiece other.model (vocab 320"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("but " + tokens + " holds tokens of sentencepiece tok.model (vocab 300"), std::string::npos)
      << r.output;
  EXPECT_TRUE(r.losses.empty());
}

}  // namespace
}  // namespace ptdp::test
