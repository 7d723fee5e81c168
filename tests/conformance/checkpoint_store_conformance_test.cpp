// The CheckpointStore conformance suite: what every checkpoint store promises (sdk's
// checkpoint_store.hpp), written once and run for every store plugin named in
// PTDP_CONFORMANCE_CHECKPOINT (default every store the build made: ckpt-fs), each loaded through the core's plugin registry
// and used only through the interface: atomic commit, listing, resharding reads, retention,
// clearing unfinished saves, and every refusal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "ptdp/checkpoint_store.hpp"
#include "support/plugins_under_test.hpp"
#include "support/error_message.hpp"

namespace ptdp::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> stores_under_test() {
  return test::plugins_under_test("PTDP_CONFORMANCE_CHECKPOINT", ',', PluginKind::CheckpointStore);
}

using test::error_of;

const std::vector<int64_t> kShape{8, 6};

// Element (r, c) of the global tensor; every element distinct.
float value_at(int64_t r, int64_t c) { return 0.5f * static_cast<float>(r * kShape[1] + c) + 1.0f; }

std::vector<float> box(const std::vector<int64_t>& offset, const std::vector<int64_t>& shape) {
  std::vector<float> out;
  for (int64_t r = 0; r < shape[0]; ++r)
    for (int64_t c = 0; c < shape[1]; ++c) out.push_back(value_at(offset[0] + r, offset[1] + c));
  return out;
}

ShardInfo shard(const std::vector<int64_t>& offset, const std::vector<int64_t>& shape, const std::string& name = "w") {
  return ShardInfo{name, DType::F32, kShape, offset, shape};
}

class CheckpointStoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  CheckpointStoreConformance()
      : root_(fs::temp_directory_path() / ("ptdp-store-conformance-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
  }
  ~CheckpointStoreConformance() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // A store object of rank `rank` in a world of `world`, open on the suite's folder.
  std::shared_ptr<CheckpointStore> store(int rank = 0, int world = 1, bool writing = true) {
    PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
    const PluginInfo& info = registry.load(GetParam(), PluginKind::CheckpointStore, "checkpoint");
    auto object = create_plugin<CheckpointStore>(info, toml::table{}, PluginPlace{rank, world});
    if (writing) object->open(root_.string());
    else object->open_existing(root_.string());
    return object;
  }

  // Ranks 0 and 1 each save half of the rows of "w" for `step`, then rank 0 commits.
  void save_two_ranks(int64_t step, const std::string& metadata = "{}") {
    auto rank0 = store(0, 2), rank1 = store(1, 2);
    rank0->write_shard(step, 0, shard({0, 0}, {4, 6}), box({0, 0}, {4, 6}).data());
    rank1->write_shard(step, 1, shard({4, 0}, {4, 6}), box({4, 0}, {4, 6}).data());
    rank0->finish_rank(step, 0);
    rank1->finish_rank(step, 1);
    rank0->commit(step, 2, metadata);
  }

  std::vector<float> read(CheckpointStore& s, int64_t step, const std::vector<int64_t>& offset,
                          const std::vector<int64_t>& shape) {
    std::vector<float> out(static_cast<size_t>(shape[0] * shape[1]), -1.0f);
    s.read(step, shard(offset, shape), out.data());
    return out;
  }

  fs::path root_;
};

TEST_P(CheckpointStoreConformance, AStepIsListedOnlyOnceCommitted) {
  auto rank0 = store(0, 2), rank1 = store(1, 2);
  rank0->write_shard(5, 0, shard({0, 0}, {4, 6}), box({0, 0}, {4, 6}).data());
  rank1->write_shard(5, 1, shard({4, 0}, {4, 6}), box({4, 0}, {4, 6}).data());
  rank0->finish_rank(5, 0);
  rank1->finish_rank(5, 1);
  EXPECT_TRUE(store()->list_steps().empty()) << "visible before commit";
  rank0->commit(5, 2, R"({"step": 5})");
  auto reader = store(0, 1, false);
  EXPECT_EQ(reader->list_steps(), std::vector<int64_t>{5});
  EXPECT_EQ(nlohmann::json::parse(reader->metadata(5)), nlohmann::json::parse(R"({"step": 5})"));
  EXPECT_EQ(read(*reader, 5, {0, 0}, kShape), box({0, 0}, kShape));
  std::vector<int64_t> shard_rows;
  for (const ShardInfo& s : reader->shards(5)) shard_rows.push_back(s.offset[0]);
  std::sort(shard_rows.begin(), shard_rows.end());
  EXPECT_EQ(shard_rows, (std::vector<int64_t>{0, 4}));
}

TEST_P(CheckpointStoreConformance, StepsAreListedAscending) {
  for (int64_t step : {30, 10, 20}) save_two_ranks(step);
  EXPECT_EQ(store()->list_steps(), (std::vector<int64_t>{10, 20, 30}));
}

TEST_P(CheckpointStoreConformance, CommitRefusesAStepSomeRanksDidNotFinish) {
  auto rank0 = store(0, 2);
  rank0->write_shard(3, 0, shard({0, 0}, {4, 6}), box({0, 0}, {4, 6}).data());
  rank0->finish_rank(3, 0);
  EXPECT_NE(error_of([&] { rank0->commit(3, 2, "{}"); }), "(no error)");
  EXPECT_TRUE(store()->list_steps().empty());
}

TEST_P(CheckpointStoreConformance, CommitRefusesATensorItsShardsDoNotCover) {
  auto rank0 = store(0, 1);
  rank0->write_shard(3, 0, shard({0, 0}, {4, 6}), box({0, 0}, {4, 6}).data());
  rank0->finish_rank(3, 0);
  EXPECT_THAT(error_of([&] { rank0->commit(3, 1, "{}"); }), HasSubstr("'w'"));
  EXPECT_TRUE(store()->list_steps().empty());
}

TEST_P(CheckpointStoreConformance, ReadsAnyRegionWhateverLayoutSavedIt) {
  save_two_ranks(1);
  auto reader = store(0, 1, false);
  // Column slabs across both saved row slabs, as a tensor-parallel split of dim 1 reads them.
  for (int64_t c = 0; c < 6; c += 2) EXPECT_EQ(read(*reader, 1, {0, c}, {8, 2}), box({0, c}, {8, 2}));
  EXPECT_EQ(read(*reader, 1, {3, 1}, {2, 4}), box({3, 1}, {2, 4})) << "a box straddling both shards";
}

TEST_P(CheckpointStoreConformance, RefusesReadsThatDoNotMatchTheStep) {
  save_two_ranks(1);
  auto reader = store(0, 1, false);
  std::vector<float> out(64);
  EXPECT_THAT(error_of([&] { reader->read(2, shard({0, 0}, kShape), out.data()); }), HasSubstr("2"));
  EXPECT_THAT(error_of([&] { reader->read(1, shard({0, 0}, kShape, "nope"), out.data()); }), HasSubstr("nope"));
  ShardInfo other_shape{"w", DType::F32, {6, 8}, {0, 0}, {6, 8}};
  EXPECT_NE(error_of([&] { reader->read(1, other_shape, out.data()); }), "(no error)");
  ShardInfo other_dtype{"w", DType::BF16, kShape, {0, 0}, kShape};
  EXPECT_NE(error_of([&] { reader->read(1, other_dtype, out.data()); }), "(no error)");
  EXPECT_NE(error_of([&] { reader->read(1, shard({6, 0}, {4, 6}), out.data()); }), "(no error)")
      << "a region outside the tensor";
}

TEST_P(CheckpointStoreConformance, RefusesWritesThatCannotBeStored) {
  auto s = store();
  const std::vector<float> data = box({0, 0}, kShape);
  EXPECT_NE(error_of([&] { s->write_shard(1, 0, shard({6, 0}, {4, 6}), data.data()); }), "(no error)");
  EXPECT_NE(error_of([&] { s->write_shard(1, 0, shard({0, 0}, kShape, "__metadata__"), data.data()); }),
            "(no error)");
  s->write_shard(1, 0, shard({0, 0}, kShape), data.data());
  EXPECT_THAT(error_of([&] { s->write_shard(1, 0, shard({0, 0}, kShape), data.data()); }), HasSubstr("twice"));
}

TEST_P(CheckpointStoreConformance, RemoveStepUnlistsItAndKeepsTheOthers) {
  for (int64_t step : {1, 2, 3}) save_two_ranks(step);
  store()->remove_step(2);
  auto reader = store(0, 1, false);
  EXPECT_EQ(reader->list_steps(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(read(*reader, 3, {0, 0}, kShape), box({0, 0}, kShape));
  EXPECT_NE(error_of([&] { store()->remove_step(2); }), "(no error)");
}

TEST_P(CheckpointStoreConformance, DiscardUnfinishedClearsInterruptedSavesOnly) {
  save_two_ranks(1);
  store()->write_shard(2, 0, shard({0, 0}, kShape), box({0, 0}, kShape).data());  // never finished
  EXPECT_FALSE(store()->discard_unfinished().empty());
  EXPECT_TRUE(store()->discard_unfinished().empty()) << "nothing left to clear";
  EXPECT_EQ(store()->list_steps(), std::vector<int64_t>{1});
  save_two_ranks(2);
  EXPECT_EQ(store()->list_steps(), (std::vector<int64_t>{1, 2}));
}

TEST_P(CheckpointStoreConformance, OpenExistingRefusesAMissingFolderAndCreatesNothing) {
  PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
  auto s = create_plugin<CheckpointStore>(registry.load(GetParam(), PluginKind::CheckpointStore, "checkpoint"),
                                          toml::table{});
  EXPECT_NE(error_of([&] { s->open_existing(root_.string()); }), "(no error)");
  EXPECT_FALSE(fs::exists(root_));
}

TEST_P(CheckpointStoreConformance, SaysHowMuchSpaceIsLeft) { EXPECT_GT(store()->available_bytes(), 0u); }

INSTANTIATE_TEST_SUITE_P(Plugins, CheckpointStoreConformance, ::testing::ValuesIn(stores_under_test()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace ptdp::conformance
