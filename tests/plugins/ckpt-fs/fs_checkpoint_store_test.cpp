// Writing, committing and listing steps, and what survives an interrupted write.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

#include <nlohmann/json.hpp>

#include "store_test_support.hpp"

namespace ptdp::ckptfs::test {
namespace {

using ::testing::HasSubstr;

class FsStoreTest : public ::testing::Test {
 protected:
  FsStoreTest() { store.open(root().string()); }
  fs::path root() const { return scratch.path(); }
  fs::path step_dir(int64_t step) const { return root() / FsCheckpointStore::step_folder_name(step); }
  fs::path staging_dir(int64_t step) const { return root() / FsCheckpointStore::staging_folder_name(step); }

  ScratchFolder scratch;
  FsCheckpointStore store{FsCheckpointStore::Options{}};
  const std::vector<int64_t> shape{8, 6};
  const std::vector<float> values = global_values(shape);
};

TEST_F(FsStoreTest, RoundTripOfSeveralDtypesAndMetadata) {
  const std::vector<int32_t> ids{7, -3, 11, 0, 42};
  const float scalar = 2.75f;
  store.write_shard(3, 0, shard_info("w", shape, {{0, 0}, shape}), values.data());
  store.write_shard(3, 0, ShardInfo{"ids", DType::I32, {5}, {0}, {5}}, ids.data());
  store.write_shard(3, 0, ShardInfo{"scale", DType::F32, {}, {}, {}}, &scalar);
  store.finish_rank(3, 0);
  EXPECT_TRUE(store.list_steps().empty()) << "a step is invisible before commit";
  store.commit(3, 1, R"({"iteration": 3, "loss": 1.5})");

  EXPECT_EQ(store.list_steps(), std::vector<int64_t>{3});
  EXPECT_EQ(nlohmann::json::parse(store.metadata(3)), nlohmann::json::parse(R"({"iteration": 3, "loss": 1.5})"));
  EXPECT_EQ(read_part(store, 3, "w", shape, {{0, 0}, shape}), values);
  std::vector<int32_t> ids_back(5);
  store.read(3, ShardInfo{"ids", DType::I32, {5}, {0}, {5}}, ids_back.data());
  EXPECT_EQ(ids_back, ids);
  float scalar_back = 0;
  store.read(3, ShardInfo{"scale", DType::F32, {}, {}, {}}, &scalar_back);
  EXPECT_EQ(scalar_back, scalar);

  std::vector<ShardInfo> shards = store.shards(3);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].name, "ids");
  EXPECT_EQ(shards[0].dtype, DType::I32);
  EXPECT_EQ(shards[2].name, "w");
  EXPECT_EQ(shards[2].global_shape, shape);
  EXPECT_FALSE(fs::exists(staging_dir(3)));
}

TEST_F(FsStoreTest, ManyRanksCommitOneStepAndAnotherStoreReadsIt) {
  const std::vector<Part> rows = split(shape, 0, 4);
  const std::vector<float> bias = global_values({6}, 100.0f);
  for (int rank = 0; rank < 4; ++rank) {
    // Each rank is its own process in a run: give each its own store.
    FsCheckpointStore rank_store{FsCheckpointStore::Options{}};
    rank_store.open(root().string());
    std::vector<float> part = cut(values, shape, rows[rank].offset, rows[rank].shape);
    rank_store.write_shard(20, rank, shard_info("w", shape, rows[rank]), part.data());
    if (rank == 0) rank_store.write_shard(20, rank, shard_info("b", {6}, {{0}, {6}}), bias.data());
    rank_store.finish_rank(20, rank);
  }
  store.commit(20, 4, "");

  FsCheckpointStore reader{FsCheckpointStore::Options{}};
  reader.open(root().string());
  EXPECT_EQ(reader.list_steps(), std::vector<int64_t>{20});
  EXPECT_EQ(reader.metadata(20), "{}");
  EXPECT_EQ(read_part(reader, 20, "w", shape, {{0, 0}, shape}), values);
  EXPECT_EQ(read_part(reader, 20, "b", {6}, {{0}, {6}}), bias);
  EXPECT_EQ(reader.shards(20).size(), 5u);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_TRUE(fs::exists(step_dir(20) / FsCheckpointStore::rank_file_name(rank)));
  EXPECT_TRUE(fs::exists(step_dir(20) / "index.json"));
}

TEST_F(FsStoreTest, CommitRefusesWhileRanksAreMissingThenSucceeds) {
  const std::vector<Part> rows = split(shape, 0, 4);
  auto finish = [&](int rank) {
    std::vector<float> part = cut(values, shape, rows[rank].offset, rows[rank].shape);
    store.write_shard(5, rank, shard_info("w", shape, rows[rank]), part.data());
    store.finish_rank(5, rank);
  };
  finish(0);
  finish(2);
  std::string message = error_of([&] { store.commit(5, 4, "{}"); });
  EXPECT_THAT(message, HasSubstr("cannot commit step 5"));
  EXPECT_THAT(message, HasSubstr("ranks 1, 3 of 4 did not finish"));
  EXPECT_THAT(message, HasSubstr((staging_dir(5) / "rank-00001.safetensors").string()));
  EXPECT_TRUE(store.list_steps().empty());

  finish(1);
  finish(3);
  store.commit(5, 4, "{}");
  EXPECT_EQ(read_part(store, 5, "w", shape, {{0, 0}, shape}), values);
}

TEST_F(FsStoreTest, CommitRefusesOverlappingOrIncompleteTensors) {
  std::vector<float> top = cut(values, shape, {0, 0}, {5, 6});
  std::vector<float> rest = cut(values, shape, {4, 0}, {4, 6});
  store.write_shard(1, 0, shard_info("w", shape, {{0, 0}, {5, 6}}), top.data());
  store.write_shard(1, 1, shard_info("w", shape, {{4, 0}, {4, 6}}), rest.data());
  store.finish_rank(1, 0);
  store.finish_rank(1, 1);
  EXPECT_THAT(error_of([&] { store.commit(1, 2, "{}"); }),
              HasSubstr("tensor 'w': shards in rank-00000.safetensors (offset [0, 0]) and "
                        "rank-00001.safetensors (offset [4, 0]) overlap"));

  store.write_shard(2, 0, shard_info("w", shape, {{0, 0}, {5, 6}}), top.data());
  store.finish_rank(2, 0);
  EXPECT_THAT(error_of([&] { store.commit(2, 1, "{}"); }),
              HasSubstr("tensor 'w' [8, 6] is incomplete: its shards hold 30 of 48 elements"));
  EXPECT_TRUE(store.list_steps().empty());
}

TEST_F(FsStoreTest, CommitRefusesRanksThatDisagreeOnATensor) {
  std::vector<float> half = cut(values, shape, {0, 0}, {4, 6});
  store.write_shard(1, 0, shard_info("w", shape, {{0, 0}, {4, 6}}), half.data());
  store.write_shard(1, 1, shard_info("w", {8, 7}, {{4, 0}, {4, 6}}), half.data());
  store.finish_rank(1, 0);
  store.finish_rank(1, 1);
  EXPECT_THAT(error_of([&] { store.commit(1, 2, "{}"); }),
              HasSubstr("tensor 'w' is f32 [8, 6] in rank-00000.safetensors but f32 [8, 7] in "
                        "rank-00001.safetensors"));
}

TEST_F(FsStoreTest, CommitRefusesMetadataThatIsNotJson) {
  store.finish_rank(1, 0);
  EXPECT_THAT(error_of([&] { store.commit(1, 1, "{iteration: 1"); }), HasSubstr("metadata is not valid JSON"));
  EXPECT_THAT(error_of([&] { store.commit(1, 0, "{}"); }), HasSubstr("world size 0 is not positive"));
  EXPECT_TRUE(store.list_steps().empty());
}

TEST_F(FsStoreTest, WritesThatCannotBeStoredAreRefused) {
  FsCheckpointStore unopened{FsCheckpointStore::Options{}};
  EXPECT_THAT(error_of([&] { unopened.list_steps(); }), HasSubstr("used before open()"));
  EXPECT_THAT(error_of([&] { store.write_shard(-1, 0, shard_info("w", shape, {{0, 0}, shape}), values.data()); }),
              HasSubstr("step -1 is negative"));
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("w", shape, {{6, 0}, {4, 6}}), values.data()); }),
              HasSubstr("rank 0 step 1: shard of tensor 'w': offset [6, 0] shape [4, 6] lies outside global shape [8, 6]"));
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("w", shape, {{0}, {8}}), values.data()); }),
              HasSubstr("do not have the rank of global shape [8, 6]"));
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("__metadata__", shape, {{0, 0}, shape}), values.data()); }),
              HasSubstr("cannot name a tensor"));
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("w", shape, {{0, 0}, shape}), nullptr); }),
              HasSubstr("has no data"));
  store.write_shard(1, 0, shard_info("w", shape, {{0, 0}, shape}), values.data());
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("w", shape, {{0, 0}, shape}), values.data()); }),
              HasSubstr("tensor 'w' written twice"));

  const fs::path file = root() / "plain-file";
  std::ofstream(file) << "x";
  FsCheckpointStore other{FsCheckpointStore::Options{}};
  EXPECT_THAT(error_of([&] { other.open(file.string()); }), HasSubstr(file.string()));
}

TEST_F(FsStoreTest, AFailedWriteSpoilsThatRanksStep) {
  // write(2) reports EFAULT for an address the process cannot read: a failed write on demand.
  const void* unreadable = reinterpret_cast<const void*>(uintptr_t{8});
  store.write_shard(1, 0, shard_info("a", {6}, {{0}, {6}}), values.data());
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("w", shape, {{0, 0}, shape}), unreadable); }),
              HasSubstr("rank-00000.safetensors.spool: cannot write"));
  // The spool may hold part of "w"; nothing written after it could be trusted.
  EXPECT_THAT(error_of([&] { store.write_shard(1, 0, shard_info("b", {6}, {{0}, {6}}), values.data()); }),
              HasSubstr("rank 0 step 1: an earlier write of this rank's shards failed"));
  EXPECT_THAT(error_of([&] { store.finish_rank(1, 0); }), HasSubstr("an earlier write of this rank's shards failed"));
  EXPECT_THAT(error_of([&] { store.commit(1, 1, "{}"); }), HasSubstr("rank 0 of 1 did not finish"));
}

TEST_F(FsStoreTest, ListStepsIgnoresUncommittedSteps) {
  save_layout(store, 1, "w", shape, values, split(shape, 0, 2));
  // Step 2: rank 0 finished, rank 1 still writing, nobody committed.
  store.write_shard(2, 0, shard_info("w", shape, {{0, 0}, {4, 6}}), values.data());
  store.finish_rank(2, 0);
  store.write_shard(2, 1, shard_info("w", shape, {{4, 0}, {4, 6}}), values.data());
  // Step 3: complete on disk, index and all, but never renamed into place.
  fs::copy(step_dir(1), staging_dir(3));

  EXPECT_EQ(store.list_steps(), std::vector<int64_t>{1});
  FsCheckpointStore fresh{FsCheckpointStore::Options{}};
  fresh.open(root().string());
  EXPECT_EQ(fresh.list_steps(), std::vector<int64_t>{1});
  EXPECT_THAT(error_of([&] { fresh.read(3, shard_info("w", shape, {{0, 0}, shape}), nullptr); }),
              HasSubstr("step 3 is not committed in " + root().string() + " (committed steps: 1)"));
}

TEST_F(FsStoreTest, CrashWhileWritingAStepKeepsThePreviousOneAndTheStepCanBeWrittenAgain) {
  save_layout(store, 1, "w", shape, values, split(shape, 0, 2));
  {
    // The job dies while writing step 2: rank 0 is half way through its spool, rank 1 was
    // renaming its file into place.
    FsCheckpointStore dying{FsCheckpointStore::Options{}};
    dying.open(root().string());
    dying.write_shard(2, 0, shard_info("w", shape, {{0, 0}, {4, 6}}), values.data());
    dying.write_shard(2, 1, shard_info("w", shape, {{4, 0}, {4, 6}}), values.data());
  }
  std::ofstream(staging_dir(2) / "rank-00001.safetensors.tmp") << "partial";
  std::ofstream(staging_dir(2) / "rank-00007.safetensors") << "from an earlier, larger run";

  FsCheckpointStore restarted{FsCheckpointStore::Options{}};
  restarted.open(root().string());
  EXPECT_EQ(restarted.list_steps(), std::vector<int64_t>{1});
  EXPECT_EQ(read_part(restarted, 1, "w", shape, {{0, 0}, shape}), values);
  EXPECT_THAT(error_of([&] { restarted.commit(2, 2, "{}"); }), HasSubstr("ranks 0-1 of 2 did not finish"));

  // The run resumes from step 1 and writes step 2 again, with other values.
  const std::vector<float> later = global_values(shape, 50.0f);
  save_layout(restarted, 2, "w", shape, later, split(shape, 1, 2));
  EXPECT_EQ(restarted.list_steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(read_part(restarted, 2, "w", shape, {{0, 0}, shape}), later);
  EXPECT_EQ(read_part(restarted, 1, "w", shape, {{0, 0}, shape}), values);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(step_dir(2))) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"index.json", "rank-00000.safetensors", "rank-00001.safetensors"}));
  EXPECT_FALSE(fs::exists(staging_dir(2)));
}

TEST_F(FsStoreTest, CommitClearsAbandonedStagingOfEarlierSteps) {
  store.write_shard(4, 0, shard_info("w", shape, {{0, 0}, shape}), values.data());  // never finished
  save_layout(store, 6, "w", shape, values, split(shape, 0, 1));
  EXPECT_FALSE(fs::exists(staging_dir(4)));
  EXPECT_EQ(store.list_steps(), std::vector<int64_t>{6});
}

TEST_F(FsStoreTest, CommittingAStepAgainReplacesItAtomically) {
  save_layout(store, 7, "w", shape, values, split(shape, 0, 2));
  EXPECT_EQ(read_part(store, 7, "w", shape, {{0, 0}, shape}), values);
  const std::vector<float> later = global_values(shape, -9.0f);
  std::vector<float> whole = later;
  store.write_shard(7, 0, shard_info("w", shape, {{0, 0}, shape}), whole.data());
  store.finish_rank(7, 0);
  store.commit(7, 1, R"({"again": true})");
  EXPECT_EQ(store.list_steps(), std::vector<int64_t>{7});
  EXPECT_EQ(read_part(store, 7, "w", shape, {{0, 0}, shape}), later);
  EXPECT_EQ(store.metadata(7), R"({"again":true})");
  EXPECT_FALSE(fs::exists(step_dir(7) / "rank-00001.safetensors"));
  EXPECT_FALSE(fs::exists(staging_dir(7)));
}

TEST_F(FsStoreTest, WithoutFsyncTheLayoutIsTheSame) {
  FsCheckpointStore fast{FsCheckpointStore::Options{false}};
  fast.open(root().string());
  save_layout(fast, 1, "w", shape, values, split(shape, 1, 3));
  EXPECT_EQ(store.list_steps(), std::vector<int64_t>{1});
  EXPECT_EQ(read_part(store, 1, "w", shape, {{0, 0}, shape}), values);
}

}  // namespace
}  // namespace ptdp::ckptfs::test
