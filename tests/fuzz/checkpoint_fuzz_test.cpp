// A committed step with a mutated index.json (its text, its fields, the run's metadata inside it)
// or a mutated rank file (the safetensors header's bytes or fields): reading it, checking it before
// a resume, and resuming from it either work or are refused in one line naming the folder or the
// file, never with a JSON library's text; and no step on disk is lost.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_preflight.hpp"
#include "file_bytes.hpp"
#include "fuzz_manifest.hpp"
#include "manifest/manifest_loader.hpp"
#include "mutations.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "ptdp/checkpoint_store.hpp"
#include "ptdp/error.hpp"
#include "refusal_line.hpp"
#include "support/host_command.hpp"
#include "support/temp_dir.hpp"

namespace ptdp {
namespace {

namespace fs = std::filesystem;

constexpr int kCases = 300;
constexpr int kRunEvery = 6;  // every sixth case also resumes the run from the damaged step
constexpr uint64_t kSeed = 3412;
constexpr uint64_t kMaxShardBytesRead = 64 << 20;

using fuzz::read_file;
using fuzz::write_file;

// Every file under `dir` with its bytes.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) out[fs::relative(entry.path(), dir).string()] = read_file(entry.path());
  return out;
}

// A tiny fp16 run on a version 2 data file: its steps hold a tokenizer, a data record, a loss
// scale and a learning-rate schedule beside the manifest, so every record a resume reads is there.
class CheckpointFuzz : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("ptdp-checkpoint-fuzz");
    const fs::path root = dir_->path();
    std::ofstream(root / "a.txt") << std::string(3000, 'a') + "the quick brown fox";
    std::ofstream(root / "b.txt") << std::string(3000, 'b') + "jumps over the lazy dog";
    const auto encode = test::run_host_command(
        PTDP_TEST_HOST, "data encode " + (root / "a.txt").string() + " " + (root / "b.txt").string() + " " +
                            (root / "tokens.bin").string());
    ASSERT_EQ(encode.exit_code, 0) << encode.output;
    manifest_ = (root / "tiny.toml").string();
    std::string manifest = fuzz::fuzz_manifest("[run]\nsteps = 2\n[precision]\nparams = \"fp16\"\n[checkpoint]\nevery = 1\n");
    manifest.replace(manifest.find("corpus.txt"), 10, "tokens.bin");
    std::ofstream(manifest_) << manifest;
    pristine_ = (root / "pristine").string();
    const auto run = test::run_host_command(PTDP_TEST_HOST, "run " + manifest_ + " --set 'checkpoint.dir=\"" +
                                                                pristine_ + "\"'");
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static test::TempDir* dir_;
  static std::string manifest_, pristine_;
};
test::TempDir* CheckpointFuzz::dir_ = nullptr;
std::string CheckpointFuzz::manifest_, CheckpointFuzz::pristine_;

// What the case mutates.
enum class Target { IndexBytes, IndexFields, Metadata, ShardHeaderBytes, ShardHeaderFields };

std::string mutate_step(fuzz::Mutator& mutate, const fs::path& step, Target target) {
  const fs::path index = step / "index.json", shard = step / "rank-00000.safetensors";
  switch (target) {
    case Target::IndexBytes:
      write_file(index, mutate.bytes(read_file(index)));
      return index.string();
    case Target::IndexFields:
    case Target::Metadata: {
      nlohmann::json doc = nlohmann::json::parse(read_file(index));
      if (target == Target::Metadata) doc["metadata"] = mutate.json(doc["metadata"]);
      else doc = mutate.json(doc);
      write_file(index, doc.dump(1));
      return index.string();
    }
    case Target::ShardHeaderBytes:
    case Target::ShardHeaderFields: {
      std::string bytes = read_file(shard);
      uint64_t length = 0;
      std::memcpy(&length, bytes.data(), 8);
      if (target == Target::ShardHeaderBytes) {
        write_file(shard, mutate.bytes(bytes, static_cast<size_t>(8 + length)));
        return shard.string();
      }
      nlohmann::json header = nlohmann::json::parse(bytes.substr(8, length));
      std::string text = mutate.json(header).dump();
      text.append((8 - text.size() % 8) % 8, ' ');
      const uint64_t new_length = text.size();
      std::string out(8, '\0');
      std::memcpy(out.data(), &new_length, 8);
      write_file(shard, out + text + bytes.substr(8 + length));
      return shard.string();
    }
  }
  return {};
}

// Everything the store gives of every step, as a resume reads it.
void read_every_step(CheckpointStore& store) {
  for (int64_t step : store.list_steps()) {
    store.metadata(step);
    for (const ShardInfo& shard : store.shards(step)) {
      uint64_t bytes = dtype_size(shard.dtype);
      for (int64_t d : shard.shape) bytes = d > 0 && bytes <= kMaxShardBytesRead ? bytes * static_cast<uint64_t>(d) : bytes;
      if (bytes > kMaxShardBytesRead) continue;  // the store may hold it; this test does not allocate it
      std::vector<char> data(bytes);
      store.read(step, shard, data.data());
    }
  }
}

TEST_F(CheckpointFuzz, DamagedStepsAreReadOrRefusedInOneLineAndNothingIsLost) {
  ASSERT_FALSE(pristine_.empty());
  const std::map<std::string, std::string> pristine = files_under(pristine_);
  ASSERT_TRUE(pristine.count("step-00000002/index.json")) << "the run saved no step 2";
  PluginRegistry registry(PluginRegistry::default_search_path({PTDP_TEST_PLUGIN_DIR}));
  const PluginInfo& ckpt_fs = registry.load("ckpt-fs", PluginKind::CheckpointStore, "checkpoint");
  const fs::path folder = dir_->path() / "ckpt";
  const RunConfig resuming =
      load_manifest(manifest_, {"checkpoint.dir=\"" + folder.string() + "\"", "run.steps=3"});
  fuzz::Mutator mutate(kSeed);
  const Target targets[] = {Target::IndexBytes, Target::IndexFields, Target::Metadata, Target::Metadata,
                            Target::ShardHeaderBytes, Target::ShardHeaderFields};
  int refused = 0;
  for (int i = 0; i < kCases; ++i) {
    fs::remove_all(folder);
    fs::copy(pristine_, folder, fs::copy_options::recursive);
    const Target target = targets[i % std::size(targets)];
    const std::string file = mutate_step(mutate, folder / "step-00000002", target);
    const std::string label = "case " + std::to_string(i) + " (" + file + ")";
    const std::map<std::string, std::string> damaged = files_under(folder);
    try {
      auto store = create_plugin<CheckpointStore>(ckpt_fs, toml::table{});
      store->open_existing(folder.string());
      read_every_step(*store);
      prepare_checkpoint_folder(resuming, CheckpointFolderUse::Validate);
    } catch (const Error& e) {
      ++refused;
      fuzz::expect_clean_refusal(e.what(), folder.string(), label);
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": not a refusal but " << e.what();
    }
    if (i % kRunEvery == 0 || target == Target::Metadata) {
      const auto run = test::run_host_command(
          PTDP_TEST_HOST, "run " + manifest_ + " --set 'checkpoint.dir=\"" + folder.string() + "\"' --set run.steps=3");
      EXPECT_TRUE(run.exit_code >= 0 && run.exit_code <= 2) << label << ": exit " << run.exit_code << "\n"
                                                            << run.output.substr(0, 3000);
      // Every error line is a clean refusal naming the folder.
      size_t start = 0;
      for (size_t end; (end = run.output.find('\n', start)) != std::string::npos; start = end + 1) {
        const std::string line = run.output.substr(start, end - start);
        if (line.find(" error ") != std::string::npos) fuzz::expect_clean_refusal(line, folder.string(), label);
        EXPECT_LE(line.size(), fuzz::kMaxRefusalChars) << label << ": " << line.substr(0, 2000);
        EXPECT_EQ(line.find("json.exception"), std::string::npos) << label << ": " << line.substr(0, 2000);
      }
    }
    // Nothing was lost: every file of the damaged folder is still there as it was (a run that
    // resumed only added its step 3).
    for (const auto& [name, bytes] : damaged) {
      ASSERT_TRUE(fs::exists(folder / name)) << label << ": " << name << " was removed";
      EXPECT_EQ(read_file(folder / name), bytes) << label << ": " << name << " was changed";
    }
  }
  EXPECT_GT(refused, kCases / 4);
}

}  // namespace
}  // namespace ptdp
