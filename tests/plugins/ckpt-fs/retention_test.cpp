// What a run needs of its folder besides writing steps: refusing a folder it cannot write in at
// open(), reading another run's folder without touching it (open_existing), deleting old steps (checkpoint.keep) without ever listing a half-deleted one, clearing
// what interrupted saves left, and saying how much space is free.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "store_test_support.hpp"

namespace ptdp::ckptfs::test {
namespace {

using ::testing::HasSubstr;

class FsStoreRetentionTest : public ::testing::Test {
 protected:
  FsStoreRetentionTest() { store.open(root().string()); }
  fs::path root() const { return scratch.path(); }

  ScratchFolder scratch;
  FsCheckpointStore store{FsCheckpointStore::Options{}};
  const std::vector<int64_t> shape{4, 3};
  const std::vector<float> values = global_values(shape);
};

TEST_F(FsStoreRetentionTest, OpenRefusesAFolderItCannotWriteIn) {
  // /proc refuses new files even to root, for whom permission bits do not count.
  FsCheckpointStore other{FsCheckpointStore::Options{}};
  EXPECT_THAT(error_of([&] { other.open("/proc"); }), HasSubstr("ckpt-fs: cannot write in checkpoint folder /proc: "));
  // And open() leaves nothing of its probe behind in a folder it can write in.
  EXPECT_TRUE(fs::is_empty(root()));
}

TEST_F(FsStoreRetentionTest, OpenExistingReadsWithoutCreatingOrWritingAnything) {
  save_layout(store, 3, "w", shape, values, split(shape, 0, 2));
  const auto before = fs::last_write_time(root());
  FsCheckpointStore reader{FsCheckpointStore::Options{}};
  reader.open_existing(root().string());
  EXPECT_EQ(reader.list_steps(), std::vector<int64_t>{3});
  EXPECT_EQ(read_part(reader, 3, "w", shape, {{0, 0}, shape}), values);
  EXPECT_EQ(fs::last_write_time(root()), before) << "the folder was written to";
  const fs::path missing = root() / "no-such-run";
  EXPECT_THAT(error_of([&] { reader.open_existing(missing.string()); }),
              HasSubstr("ckpt-fs: " + missing.string() + ": no such checkpoint folder"));
  EXPECT_FALSE(fs::exists(missing));
}

TEST_F(FsStoreRetentionTest, RemoveStepUnlistsItAndDeletesItsFiles) {
  for (int64_t step : {1, 2, 3}) save_layout(store, step, "w", shape, values, split(shape, 0, 2));
  store.remove_step(2);
  EXPECT_EQ(store.list_steps(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(fs::exists(root() / FsCheckpointStore::step_folder_name(2)));
  EXPECT_EQ(read_part(store, 3, "w", shape, {{0, 0}, shape}), values);
  EXPECT_THAT(error_of([&] { store.remove_step(2); }),
              HasSubstr("cannot remove step 2: it is not committed in " + root().string() + " (committed steps: 1, 3)"));
  EXPECT_EQ(std::distance(fs::directory_iterator(root()), fs::directory_iterator()), 2);
}

TEST_F(FsStoreRetentionTest, DiscardUnfinishedRemovesStagingAndHalfDeletedStepsOnly) {
  save_layout(store, 5, "w", shape, values, split(shape, 0, 1));
  store.write_shard(9, 0, shard_info("w", shape, {{0, 0}, shape}), values.data());  // a save that died
  fs::create_directories(root() / ".removing-step-00000003");
  std::ofstream(root() / ".removing-step-00000003" / "rank-00000.safetensors") << "half deleted";
  std::ofstream(root() / "notes.txt") << "the user's own file";

  FsCheckpointStore restarted{FsCheckpointStore::Options{}};
  restarted.open(root().string());
  const std::vector<std::string> removed = restarted.discard_unfinished();
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_THAT(removed[0] + removed[1], HasSubstr(".staging-step-00000009 ("));
  EXPECT_THAT(removed[0] + removed[1], HasSubstr("a save that did not finish"));
  EXPECT_THAT(removed[0] + removed[1], HasSubstr(".removing-step-00000003 (12 bytes)"));
  EXPECT_FALSE(fs::exists(root() / FsCheckpointStore::staging_folder_name(9)));
  EXPECT_FALSE(fs::exists(root() / ".removing-step-00000003"));
  EXPECT_TRUE(fs::exists(root() / "notes.txt"));
  EXPECT_EQ(restarted.list_steps(), std::vector<int64_t>{5});
  EXPECT_EQ(read_part(restarted, 5, "w", shape, {{0, 0}, shape}), values);
  EXPECT_TRUE(restarted.discard_unfinished().empty());
}

TEST_F(FsStoreRetentionTest, AvailableBytesIsTheFileSystemsFreeSpace) {
  const uint64_t available = store.available_bytes();
  const auto space = fs::space(root());
  EXPECT_NE(available, UINT64_MAX);
  // Other processes write meanwhile; the two readings agree to within a few MB.
  EXPECT_NEAR(static_cast<double>(available), static_cast<double>(space.available), 64e6);
}

}  // namespace
}  // namespace ptdp::ckptfs::test
