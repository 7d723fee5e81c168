// Loading valid manifests: every key lands in its field, defaults fill the rest, derived values
// and notes are right, paths resolve, and every shipped example validates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "manifest/manifest_loader.hpp"
#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ManifestLoad, ReadsEveryTable) {
  const RunConfig c = load_manifest_string(kManifest, "t.toml");
  EXPECT_EQ(c.source, "t.toml");
  EXPECT_EQ(c.run.name, "test");
  EXPECT_EQ(c.run.steps, 10);
  EXPECT_EQ(c.run.seed, 7u);
  EXPECT_EQ(c.run.log_every, 2);
  EXPECT_EQ(c.model.layers, 8);
  EXPECT_EQ(c.model.hidden, 64);
  EXPECT_EQ(c.model.heads, 8);
  EXPECT_EQ(c.model.seq_len, 32);
  EXPECT_EQ(c.model.vocab, 256);
  EXPECT_EQ(c.parallel.tensor, 2);
  EXPECT_EQ(c.parallel.pipeline, 2);
  EXPECT_EQ(c.parallel.data, 2);
  EXPECT_EQ(c.parallel.virtual_stages, 2);
  EXPECT_EQ(c.parallel.micro_batch, 1);
  EXPECT_EQ(c.parallel.global_batch, 8);
  EXPECT_EQ(c.parallel.microbatches(), 4);
  EXPECT_TRUE(c.parallel.scatter_gather);
  EXPECT_EQ(c.parallel.recompute, "none");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.optimizer.min_lr, 1e-4);
  EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.95);
  EXPECT_EQ(c.optimizer.warmup_steps, 2);
  EXPECT_EQ(c.precision.params, "fp32");
  EXPECT_DOUBLE_EQ(c.data.val_fraction, 0.1);
  EXPECT_EQ(c.plugins.communicator, "comm-ucx");
  EXPECT_EQ(c.launch.nproc_per_node, 8);
  EXPECT_DOUBLE_EQ(c.launch.timeout_s, 30.0);  // an integer is accepted for a float key
  EXPECT_EQ(c.launch.world_size(), 8);
  EXPECT_TRUE(c.notes.empty());
}

TEST(ManifestLoad, DefaultsFillWhatIsNotWritten) {
  const RunConfig c = load_manifest_string("[model]\nlayers = 2\nhidden = 32\nheads = 4\nseq_len = 8\nvocab = 100\n",
                                           "min.toml");
  const RunConfig defaults;
  EXPECT_EQ(c.run.steps, defaults.run.steps);
  EXPECT_EQ(c.run.seed, defaults.run.seed);
  EXPECT_EQ(c.parallel.world_size(), 1);
  EXPECT_EQ(c.parallel.global_batch, defaults.parallel.global_batch);
  EXPECT_EQ(c.optimizer.type, defaults.optimizer.type);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, defaults.optimizer.lr);
  EXPECT_EQ(c.plugins.kernels, defaults.plugins.kernels);
  EXPECT_EQ(c.plugins.scheduler, defaults.plugins.scheduler);
  EXPECT_EQ(c.launch.nnodes, 1);
  EXPECT_TRUE(c.data.path.empty());
  EXPECT_EQ(c.checkpoint.dir, "");
  EXPECT_EQ(c.model.ffn_hidden, 4 * 32);
  EXPECT_EQ(c.model.padded_vocab, 100);
  // Every option slot is there, empty when not written.
  ASSERT_EQ(c.plugins.options.size(), 4u);
  for (const char* slot : {"communicator", "kernels", "scheduler", "checkpoint"})
    EXPECT_TRUE(c.plugins.options.at(slot).empty());
}

TEST(ManifestLoad, Fp16KeysLoadAndAreIgnoredUnderOtherParams) {
  const RunConfig defaults = load_manifest_string(kManifest, "t.toml");
  EXPECT_DOUBLE_EQ(defaults.precision.loss_scale_initial, 65536.0);
  EXPECT_EQ(defaults.precision.loss_scale_window, 1000);
  EXPECT_DOUBLE_EQ(defaults.precision.loss_scale_min, 1.0);
  EXPECT_EQ(defaults.precision.loss_scale_hysteresis, 2);
  EXPECT_FALSE(defaults.precision.fp16());
  const std::string keys = "\nloss_scale_initial = 1024.0\nloss_scale_window = 50\nloss_scale_min = 2048.0\n"
                           "loss_scale_hysteresis = 1";
  // Under fp32 the keys are read and checked, but no rule applies: an initial scale below the
  // minimum is no error there.
  const RunConfig fp32 = load_manifest_string(edited(kManifest, {{"params = \"fp32\"", "params = \"fp32\"" + keys}}),
                                              "t.toml");
  EXPECT_DOUBLE_EQ(fp32.precision.loss_scale_initial, 1024.0);
  EXPECT_EQ(fp32.precision.loss_scale_window, 50);
  EXPECT_DOUBLE_EQ(fp32.precision.loss_scale_min, 2048.0);
  EXPECT_EQ(fp32.precision.loss_scale_hysteresis, 1);
  const RunConfig fp16 = load_manifest_string(
      edited(kManifest, {{"params = \"fp32\"", "params = \"fp16\"\nloss_scale_initial = 4096.0\nloss_scale_min = 4096.0"}}),
      "t.toml");
  EXPECT_TRUE(fp16.precision.fp16());
  EXPECT_DOUBLE_EQ(fp16.precision.loss_scale_initial, 4096.0);
}

TEST(ManifestLoad, FfnHiddenCanBeSet) {
  const RunConfig c = load_manifest_string(edited(kManifest, {{"vocab = 256", "vocab = 256\nffn_hidden = 100"}}), "t.toml");
  EXPECT_EQ(c.model.ffn_hidden, 100);
}

TEST(ManifestLoad, TextFormatAndCheckpointKeepAreAccepted) {
  const RunConfig c = load_manifest_string(
      edited(kManifest, {{"val_fraction = 0.1", "val_fraction = 0.1\nformat = \"text\""}, {"every = 0", "every = 0\nkeep = 3"}}),
      "t.toml");
  EXPECT_EQ(c.data.format, "text");
  EXPECT_EQ(c.checkpoint.keep, 3);
}

TEST(ManifestLoad, PluginOptionsAreKeptRaw) {
  const RunConfig c = load_manifest_string(
      edited(kManifest, {{"transports = \"shm\"", "transports = \"shm\"\n[plugins.options.kernels]\nblock = 64\nexact = true"}}),
      "t.toml");
  EXPECT_EQ(c.plugins.options.at("communicator")["transports"].value<std::string>(), "shm");
  EXPECT_EQ(c.plugins.options.at("kernels")["block"].value<int64_t>(), 64);
  EXPECT_EQ(c.plugins.options.at("kernels")["exact"].value<bool>(), true);
  EXPECT_TRUE(c.plugins.options.at("scheduler").empty());
}

TEST(ManifestLoad, VocabIsPaddedToTensorAndSaysSo) {
  const RunConfig c = load_manifest_string(edited(kManifest, {{"vocab = 256", "vocab = 50257"}}), "t.toml");
  EXPECT_EQ(c.model.vocab, 50257);
  EXPECT_EQ(c.model.padded_vocab, 50258);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0], "model.vocab 50257 padded to 50258 so tensor=2 divides it");

  const RunConfig t8 = load_manifest_string(
      edited(kManifest, {{"vocab = 256", "vocab = 50257"}, {"tensor = 2", "tensor = 8"}, {"data = 2", "data = 1"},
                         {"nproc_per_node = 8", "nproc_per_node = 16"}}),
      "t.toml");
  EXPECT_EQ(t8.model.padded_vocab, 50264);
  EXPECT_THAT(t8.notes.at(0), HasSubstr("padded to 50264 so tensor=8"));
}

TEST(ManifestLoad, RecomputeEveryMayDivideTheChunk) {
  const RunConfig c = load_manifest_string(
      edited(kManifest, {{"recompute = \"none\"", "recompute = \"full\"\nrecompute_every = 2"}}), "t.toml");
  EXPECT_EQ(c.parallel.recompute, "full");
  EXPECT_EQ(c.parallel.recompute_every, 2);
}

TEST(ManifestLoad, NnodesMultipliesTheWorld) {
  const RunConfig c =
      load_manifest_string(edited(kManifest, {{"nproc_per_node = 8", "nproc_per_node = 4\nnnodes = 2"}}), "t.toml");
  EXPECT_EQ(c.launch.nnodes, 2);
  EXPECT_EQ(c.launch.world_size(), 8);
}

TEST(ManifestLoad, RelativePathsResolveAgainstTheManifestFolder) {
  TempDir dir;
  const fs::path file = dir.write("conf/run.toml", edited(kManifest, {{"path = \"corpus.txt\"", "path = \"../data/x.txt\""},
                                                                     {"dir = \"\"", "dir = \"ckpt\""},
                                                                     {"[\"plugins\"]", "[\"plugins\", \"/opt/ptdp\"]"}}));
  const RunConfig c = load_manifest(file.string());
  EXPECT_EQ(c.data.path, std::vector<std::string>{(dir.path() / "data/x.txt").string()});
  EXPECT_EQ(c.checkpoint.dir, (dir.path() / "conf/ckpt").string());
  ASSERT_EQ(c.plugins.search_path.size(), 2u);
  EXPECT_EQ(c.plugins.search_path[0], (dir.path() / "conf/plugins").string());
  EXPECT_EQ(c.plugins.search_path[1], "/opt/ptdp");
  EXPECT_TRUE(c.checkpoint.every == 0);
}

TEST(ManifestLoad, DataPathIsAListOfFilesAndGlobsWithABlendAndAValidationSet) {
  TempDir dir;
  const fs::path file = dir.write(
      "conf/run.toml", edited(kManifest, {{"path = \"corpus.txt\"",
                                           "path = [\"web_*.bin\", \"/data/books.bin\"]\n"
                                           "weights = [3, 0.5]\nval_path = \"web_val.bin\""}}));
  const RunConfig c = load_manifest(file.string());
  EXPECT_EQ(c.data.path, (std::vector<std::string>{(dir.path() / "conf/web_*.bin").string(), "/data/books.bin"}));
  EXPECT_EQ(c.data.weights, (std::vector<double>{3, 0.5}));
  EXPECT_EQ(c.data.val_path, std::vector<std::string>{(dir.path() / "conf/web_val.bin").string()});
}

TEST(ManifestLoad, RelativePathsOfAStringResolveAgainstTheCurrentFolder) {
  const RunConfig c = load_manifest_string(kManifest, "t.toml");
  EXPECT_EQ(c.data.path, std::vector<std::string>{(fs::current_path() / "corpus.txt").string()});
  EXPECT_EQ(c.checkpoint.dir, "");  // empty stays empty: no checkpoints
}

TEST(ManifestLoad, MissingFileNamesThePathAndTheReason) {
  TempDir dir;
  const std::string missing = (dir.path() / "nope.toml").string();
  try {
    load_manifest(missing);
    FAIL() << "loaded a missing file";
  } catch (const ManifestError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read manifest: No such file or directory");
  }
  try {
    load_manifest(dir.path().string());
    FAIL() << "loaded a directory";
  } catch (const ManifestError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Is a directory"));
  }
}

TEST(ManifestLoad, SyntaxErrorsGiveFileLineAndColumn) {
  const std::string text = edited(kManifest, {{"heads = 8", "heads = = 8"}});
  const std::string error = load_error(text);
  // toml++ stops at the second '=', column 9.
  EXPECT_THAT(error, StartsWith("t.toml:" + std::to_string(line_of(text, "heads = = 8")) + ":9: "));
  EXPECT_GT(error.size(), std::string("t.toml:10:9: ").size()) << "toml++'s description follows";
  EXPECT_EQ(error.find('\n'), std::string::npos);

  const std::string duplicate = edited(kManifest, {{"heads = 8", "heads = 8\nheads = 4"}});
  EXPECT_THAT(load_error(duplicate), StartsWith("t.toml:" + std::to_string(line_of(duplicate, "heads = 4")) + ":"));
}

TEST(ManifestLoad, EveryShippedExampleValidates) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(PTDP_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".toml") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_manifest(entry.path().string()));
  }
  EXPECT_GE(count, 4);
}

TEST(ManifestLoad, DocumentedFullExampleValidates) {
  std::ifstream file(PTDP_SOURCE_DIR "/docs/manifest.md");
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  const size_t section = doc.find("## A full example");
  ASSERT_NE(section, std::string::npos);
  const size_t begin = doc.find("```toml\n", section);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  const RunConfig c = load_manifest_string(doc.substr(begin + 8, end - begin - 8), "docs/manifest.md");
  EXPECT_EQ(c.parallel.world_size(), 8);
  EXPECT_EQ(c.parallel.recompute, "full");
}

TEST(ManifestLoad, TinyCpuExampleIsTheDefaultRun) {
  const RunConfig c = load_manifest(PTDP_SOURCE_DIR "/examples/gpt-tiny-cpu.toml");
  EXPECT_EQ(c.parallel.world_size(), 8);
  EXPECT_EQ(c.parallel.virtual_stages, 2);
  EXPECT_EQ(c.model.vocab, 256);
  EXPECT_EQ(c.plugins.kernels, "kernels-ref");
  EXPECT_EQ(c.plugins.scheduler, "sched-interleaved");
  EXPECT_EQ(c.data.path, std::vector<std::string>{(fs::path(PTDP_SOURCE_DIR) / "data/corpus.txt").lexically_normal().string()});
}

TEST(ManifestLoad, PaperExampleIsTheTable2Layout) {
  const RunConfig c = load_manifest(PTDP_SOURCE_DIR "/examples/gpt-175b-paper.toml");
  EXPECT_EQ(c.parallel.tensor, 8);
  EXPECT_EQ(c.parallel.pipeline, 12);
  EXPECT_EQ(c.parallel.world_size(), 1536);
  EXPECT_EQ(c.launch.world_size(), 1536);
  EXPECT_EQ(c.parallel.microbatches(), 96);
}

}  // namespace
}  // namespace ptdp::test
