// examples/gpt-tiny-cpu-sentencepiece.toml: the default run on a 2000-piece SentencePiece
// vocabulary, made by the commands its comment gives; its losses compare with the byte-level
// run's in bits per byte.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>

#include "host_run.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"

namespace ptdp::test {
namespace {

const std::string kSource = PTDP_SOURCE_DIR;

TEST(SentencePieceExample, IsTheDefaultRunOnSubwordTokens) {
  nlohmann::json bytes = run_config_json(load_manifest(kSource + "/examples/gpt-tiny-cpu.toml"));
  nlohmann::json pieces = run_config_json(load_manifest(kSource + "/examples/gpt-tiny-cpu-sentencepiece.toml"));
  EXPECT_EQ(pieces["model"]["vocab"], 2000);
  EXPECT_EQ(pieces["data"]["tokenizer"], kSource + "/data/corpus-sp2k.model");
  for (nlohmann::json* c : {&bytes, &pieces}) {
    (*c)["run"].erase("name");
    (*c)["model"].erase("vocab");
    (*c)["model"].erase("padded_vocab");
    (*c)["data"].erase("path");
    (*c)["data"].erase("tokenizer");
  }
  EXPECT_EQ(pieces, bytes) << "only the name, the vocabulary and the data differ";
}

TEST(SentencePieceExample, TrainsOnItsTokensAndPlotsInBitsPerByte) {
  TinyGptWorkspace ws;  // a scratch folder, and a byte-level run to plot beside
  const std::string model = ws.dir() + "/corpus-sp2k.model", tokens = ws.dir() + "/corpus-sp2k.bin";
  const CommandResult made = run_host_command("data tokenizer train " + kSource + "/data/corpus.txt --vocab 2000 --out " +
                                              model + " && " PTDP_TEST_HOST " data encode " + kSource +
                                              "/data/corpus.txt " + tokens + " --tokenizer " + model);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string metrics = ws.dir() + "/sp.jsonl";
  const CommandResult trained =
      run_host_command("run " + kSource + "/examples/gpt-tiny-cpu-sentencepiece.toml --set run.steps=2 --set "
                       "data.val_every=1 --set data.path=\\\"" + tokens + "\\\" --set data.tokenizer=\\\"" + model +
                       "\\\" --metrics " + metrics);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string byte_metrics = ws.dir() + "/bytes.jsonl";
  const CommandResult bytes = run_host_command("run " + ws.manifest() + " --nproc 1 --set run.steps=2 --set data.val_every=1 "
                                               "--metrics " + byte_metrics);
  ASSERT_EQ(bytes.exit_code, 0) << bytes.output;

  const std::string svg = ws.dir() + "/bpb.svg";
  const CommandResult plot = run_host_command("plot " + metrics + " " + byte_metrics + " --bits-per-byte --svg " + svg);
  ASSERT_EQ(plot.exit_code, 0) << plot.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(plot.output, m, std::regex(metrics + R"(: ([0-9.]+) bytes per training token, ([0-9.]+) per validation token)")))
      << plot.output;
  EXPECT_GT(std::stod(m[1]), 2.5) << "a 2000-piece vocabulary covers several bytes a piece";
  EXPECT_LT(std::stod(m[1]), 5.0);
  EXPECT_GT(std::stod(m[2]), 2.5);
  EXPECT_NE(plot.output.find(byte_metrics + ": 1.000 bytes per training token, 1.000 per validation token"),
            std::string::npos)
      << plot.output;
  std::ifstream in(svg);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find(">bits per byte</text>"), std::string::npos);
}

}  // namespace
}  // namespace ptdp::test
