// `ptdp-host export hf`: a step trained under p = 2, t = 2 becomes a Hugging Face GPT-2 folder
// whose loss, computed the way transformers' GPT2LMHeadModel computes it (hf_gpt2_loss.py, from
// config.json and model.safetensors alone, float64), equals ptdp's own on the same tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <iterator>
#include <regex>

#include "checkpoint/safetensors_reader.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "host_run.hpp"

namespace ptdp::test {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::string python_output(const std::string& args) {
  return run_shell(std::string(kPython) + " " + PTDP_SOURCE_DIR "/tests/e2e/hf_gpt2_loss.py " + args).output;
}

bool torch_importable() { return std::system((std::string(kPython) + " -c 'import torch, numpy' 2>/dev/null").c_str()) == 0; }

// Three steps under p = 2, t = 2, saved to `dir`: every tensor of the export is read from shards.
HostRun train_on_four_ranks(const TinyGptWorkspace& ws, const std::string& dir) {
  return ws.run({"run.steps=3", "checkpoint.every=3", "parallel.pipeline=2", "parallel.tensor=2",
                 "checkpoint.dir=\"" + dir + "\""},
                4);
}

TEST(ExportHf, TheExportedModelGivesPtdpsLossOnTheSameTokens) {
  if (!torch_importable()) GTEST_SKIP() << kPython << " cannot import torch (Debian: apt install python3-torch)";
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", hf = ws.dir() + "/hf", tokens = ws.dir() + "/sequence.txt";
  const HostRun trained = train_on_four_ranks(ws, dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  // One sequence of seq_len + 1 = 17 bytes: every window ptdp samples from it is the whole file.
  std::ofstream(tokens) << "the quick brown f";
  const CommandResult exported = run_host_command("export hf " + dir + " " + hf);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const CommandResult evaluated = run_host_command("eval " + dir + " --data " + tokens + " --format text --batches 1");
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(evaluated.output, m, std::regex(R"(loss ([0-9.]+))"))) << evaluated.output;
  const double ptdp_loss = std::stod(m[1]);
  const std::string hf_output = python_output(hf + " " + tokens);
  const double hf_loss = std::atof(hf_output.c_str());
  ASSERT_GT(hf_loss, 0) << hf_output;
  EXPECT_NEAR(hf_loss, ptdp_loss, 1e-4 * ptdp_loss) << hf_output;
}

std::vector<double> numbers_in(const std::string& text) {
  static const std::regex number(R"(-?[0-9.]+(e[-+]?[0-9]+)?)");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod(it->str()));
  return out;
}

// The same folder loaded by transformers' own GPT2LMHeadModel.from_pretrained: its logits at the
// end of a prompt are the ones `ptdp-host sample` draws from.
TEST(ExportHf, TransformersLoadsTheFolderAndGivesPtdpsLogits) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", hf = ws.dir() + "/hf", logits = ws.dir() + "/logits.jsonl";
  const HostRun trained = train_on_four_ranks(ws, dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  ASSERT_EQ(run_host_command("export hf " + dir + " " + hf).exit_code, 0);
  const std::string prompt = "116,104,101,32,113,117,105,99,107,32,98,114,111,119,110";  // "the quick brown"
  const CommandResult sampled =
      run_host_command("sample " + dir + " --prompt-ids " + prompt + " --tokens 1 --temperature 0 --logits " + logits);
  ASSERT_EQ(sampled.exit_code, 0) << sampled.output;
  std::ifstream line_file(logits);
  std::string line;
  ASSERT_TRUE(std::getline(line_file, line)) << "no logits written";
  const std::vector<double> ptdp = numbers_in(line.substr(line.find('['), line.find(']') - line.find('[')));
  const std::string python = std::string("PYTHONPATH=") + PTDP_SOURCE_DIR "/.deps/python " + kPython + " " +
                             PTDP_SOURCE_DIR "/tests/e2e/hf_transformers_logits.py " + hf + " " + prompt;
  const CommandResult hf_run = run_shell(python);
  if (hf_run.exit_code == 3) GTEST_SKIP() << hf_run.output << " (scripts/setup.sh installs it into .deps/python)";
  ASSERT_EQ(hf_run.exit_code, 0) << hf_run.output;
  const std::vector<double> theirs = numbers_in(hf_run.output);
  ASSERT_EQ(theirs.size(), 256u) << hf_run.output.substr(0, 300);
  ASSERT_EQ(ptdp.size(), theirs.size()) << line.substr(0, 300);
  for (size_t i = 0; i < ptdp.size(); ++i) EXPECT_NEAR(ptdp[i], theirs[i], 1e-4 * std::max(1.0, std::abs(theirs[i]))) << "id " << i;
}

std::string eval_loss(const std::string& dir, const std::string& tokens) {
  const CommandResult r = run_host_command("eval " + dir + " --data " + tokens + " --format text --batches 1");
  std::smatch m;
  return std::regex_search(r.output, m, std::regex(R"(loss ([0-9.]+))")) ? m[1].str() : "no loss: " + r.output;
}

TEST(ImportHf, AnExportedModelImportsBackAsStepZeroAndARunStartsFromIt) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", hf = ws.dir() + "/hf", imported = ws.dir() + "/imported";
  const std::string tokens = ws.dir() + "/sequence.txt";
  std::ofstream(tokens) << "the quick brown f";
  const HostRun trained = ws.run({"run.steps=3", "checkpoint.every=3", "parallel.tensor=2",
                                  "checkpoint.dir=\"" + dir + "\""},
                                 2);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  ASSERT_EQ(run_host_command("export hf " + dir + " " + hf).exit_code, 0);
  const CommandResult in = run_host_command("import hf " + hf + " " + ws.manifest() + " --set checkpoint.dir=\"" +
                                      imported + "\"");
  ASSERT_EQ(in.exit_code, 0) << in.output;
  EXPECT_EQ(folder_names(imported), std::vector<std::string>{"step-00000000"});
  EXPECT_EQ(eval_loss(imported, tokens), eval_loss(dir, tokens)) << "the same weights, so the same loss";
  // A run under another layout starts from the imported weights.
  const HostRun run = ws.run({"run.steps=2", "parallel.pipeline=2", "checkpoint.dir=\"" + imported + "\""}, 2);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("resumed from " + imported + " at step 0"), std::string::npos) << run.output;
  EXPECT_EQ(run.losses.size(), 2u);
}

TEST(ImportHf, AFolderOfAnotherModelIsRefusedNamingTheDimension) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", hf = ws.dir() + "/hf";
  ASSERT_EQ(ws.run({"run.steps=1", "checkpoint.every=1", "checkpoint.dir=\"" + dir + "\""}, 1).exit_code, 0);
  ASSERT_EQ(run_host_command("export hf " + dir + " " + hf).exit_code, 0);
  const CommandResult r = run_host_command("import hf " + hf + " " + ws.manifest() + " --set model.hidden=64" +
                                     " --set checkpoint.dir=\"" + ws.dir() + "/other\"");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("n_embd is 32, model.hidden is 64"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(ws.dir() + "/other/step-00000000"));
}

TEST(ImportHf, AConfigJsonThatIsNoFileIsRefusedNamingIt) {
  TinyGptWorkspace ws;
  const std::string hf = ws.dir() + "/hf";
  std::filesystem::create_directories(hf + "/config.json");
  const CommandResult r =
      run_host_command("import hf " + hf + " " + ws.manifest() + " --set checkpoint.dir=\"" + ws.dir() + "/into\"");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(hf + "/config.json: cannot read config.json: Is a directory"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("basic_filebuf"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(ws.dir() + "/into/step-00000000"));
}

// An export never replaces what is there: a folder that holds anything, or the checkpoint folder
// itself, is refused before anything is written, and the files in it are left as they were.
TEST(ExportHf, AFolderInUseIsRefusedAndLeftAsItWas) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", used = ws.dir() + "/used";
  ASSERT_EQ(train_on_four_ranks(ws, dir).exit_code, 0);
  std::filesystem::create_directories(used);
  std::ofstream(used + "/config.json") << "{\"mine\": true}\n";
  const CommandResult into_used = run_host_command("export hf " + dir + " " + used);
  EXPECT_NE(into_used.exit_code, 0);
  EXPECT_NE(into_used.output.find(used + ": already holds config.json; write into a new or empty folder"),
            std::string::npos)
      << into_used.output;
  std::ifstream kept(used + "/config.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "{\"mine\": true}\n");
  EXPECT_FALSE(std::filesystem::exists(used + "/model.safetensors"));

  for (const std::string& inside : {dir, dir + "/hf"}) {
    const CommandResult into_checkpoint = run_host_command("export hf " + dir + " " + inside);
    EXPECT_NE(into_checkpoint.exit_code, 0) << inside;
    EXPECT_NE(into_checkpoint.output.find(inside + ": lies in " + dir + ", the folder being read"), std::string::npos)
        << into_checkpoint.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/hf"));
  EXPECT_EQ(run_host_command("export hf " + dir + " " + ws.dir() + "/fresh").exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(ws.dir() + "/fresh/model.safetensors.tmp"));
}

// import hf takes a model to train from: weights that are not finite, or tensors of another model,
// are refused before anything is written; weights that are finite but give no finite loss import,
// and then eval and sample fail saying why instead of printing "loss nan" or garbage.
TEST(ImportHf, WeightsItCannotTrainFromAreRefusedAndDivergedOnesFailEvalAndSample) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", hf = ws.dir() + "/hf";
  ASSERT_EQ(train_on_four_ranks(ws, dir).exit_code, 0);
  ASSERT_EQ(run_host_command("export hf " + dir + " " + hf).exit_code, 0);
  const std::string weights = hf + "/model.safetensors";
  const auto original = read_safetensors(weights);
  auto import_with = [&](const std::function<void(std::map<std::string, NamedF32Tensor>&)>& edit,
                         const std::string& into) {
    auto tensors = original;
    edit(tensors);
    std::vector<NamedF32Tensor> list;
    for (auto& [name, t] : tensors) list.push_back(t);
    write_safetensors(weights, list);
    return run_host_command("import hf " + hf + " " + ws.manifest() + " --set checkpoint.dir=\"" + into + "\"");
  };
  const CommandResult nan = import_with(
      [](auto& t) { t.at("transformer.h.0.mlp.c_fc.weight").values[5] = std::nanf(""); }, ws.dir() + "/a");
  EXPECT_NE(nan.exit_code, 0);
  EXPECT_NE(nan.output.find("tensor 'transformer.h.0.mlp.c_fc.weight' holds nan at element 5"), std::string::npos)
      << nan.output;
  EXPECT_FALSE(std::filesystem::exists(ws.dir() + "/a/step-00000000"));
  const CommandResult extra = import_with(
      [](auto& t) { t.emplace("transformer.h.9.mlp.c_fc.weight", NamedF32Tensor{"transformer.h.9.mlp.c_fc.weight", {2}, {1, 2}}); },
      ws.dir() + "/b");
  EXPECT_NE(extra.exit_code, 0);
  EXPECT_NE(extra.output.find("tensor 'transformer.h.9.mlp.c_fc.weight' is not part of the GPT-2"), std::string::npos)
      << extra.output;

  const std::string diverged = ws.dir() + "/diverged";
  const CommandResult huge = import_with(
      [](auto& t) {
        for (float& v : t.at("transformer.h.0.attn.c_attn.weight").values) v *= 1e30f;
      },
      diverged);
  ASSERT_EQ(huge.exit_code, 0) << huge.output;
  const CommandResult eval = run_host_command("eval " + diverged + " --data " + ws.dir() + "/corpus.txt --batches 1");
  EXPECT_NE(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("the model's weights give no finite loss"), std::string::npos) << eval.output;
  const CommandResult sample = run_host_command("sample " + diverged + " --prompt-ids 116,104,101 --tokens 2");
  EXPECT_NE(sample.exit_code, 0) << sample.output;
  EXPECT_NE(sample.output.find("its weights give no finite output"), std::string::npos) << sample.output;
}

TEST(ExportHf, AStepTheFolderLacksIsRefused) {
  TinyGptWorkspace ws;
  const CommandResult r = run_host_command("export hf " + ws.dir() + "/none " + ws.dir() + "/hf");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no such checkpoint folder"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ptdp::test
