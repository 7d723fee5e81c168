// Every damaged or mismatched checkpoint is refused with the file and the reason.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "crc32c.hpp"
#include "store_test_support.hpp"

namespace ptdp::ckptfs::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class CorruptionTest : public ::testing::Test {
 protected:
  CorruptionTest() {
    store.open(scratch.path().string());
    save_layout(store, 1, "w", shape, values, split(shape, 0, 2));
    // Reads go through a fresh store, as after a restart.
    reader.open(scratch.path().string());
  }
  fs::path step_dir() const { return scratch.path() / FsCheckpointStore::step_folder_name(1); }
  fs::path rank_file(int rank) const { return step_dir() / FsCheckpointStore::rank_file_name(rank); }
  fs::path index_file() const { return step_dir() / "index.json"; }
  std::string read_error(const ShardInfo& want) {
    std::vector<char> out(1 << 10);
    return error_of([&] { reader.read(1, want, out.data()); });
  }
  std::string read_whole_error() { return read_error(shard_info("w", shape, {{0, 0}, shape})); }
  void edit_index(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json index = nlohmann::json::parse(std::ifstream(index_file()));
    edit(index);
    std::ofstream(index_file(), std::ios::trunc) << index.dump();
  }

  ScratchFolder scratch;
  FsCheckpointStore store{FsCheckpointStore::Options{false}};
  FsCheckpointStore reader{FsCheckpointStore::Options{false}};
  const std::vector<int64_t> shape{8, 6};
  const std::vector<float> values = global_values(shape);
};

TEST_F(CorruptionTest, MissingShardFile) {
  fs::remove(rank_file(1));
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(rank_file(1).string()), HasSubstr("missing file")));
  // A region inside the remaining shard still reads.
  EXPECT_EQ(read_part(reader, 1, "w", shape, {{0, 0}, {4, 6}}), cut(values, shape, {0, 0}, {4, 6}));
}

TEST_F(CorruptionTest, TruncatedData) {
  fs::resize_file(rank_file(1), fs::file_size(rank_file(1)) - 10);
  EXPECT_THAT(read_whole_error(),
              AllOf(HasSubstr(rank_file(1).string()), HasSubstr("truncated: tensor 'w' ends at data byte 96")));
}

TEST_F(CorruptionTest, AFlippedBitIsFoundByTheShardsChecksum) {
  // Flip one bit in the last byte of rank 1's data: the file keeps its size and its header.
  {
    std::fstream file(rank_file(1), std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-1, std::ios::end);
    char last = 0;
    file.get(last);
    file.seekp(-1, std::ios::end);
    file.put(static_cast<char>(last ^ 0x10));
  }
  EXPECT_THAT(read_whole_error(),
              AllOf(HasSubstr(rank_file(1).string()), HasSubstr("tensor 'w' fails its checksum (crc32c 0x"),
                    HasSubstr("the file is damaged")));
  // Even a region of the damaged shard that misses the flipped byte is refused: the checksum
  // covers the shard, so the shard is read whole.
  EXPECT_THAT(error_of([&] { read_part(reader, 1, "w", shape, {{4, 0}, {1, 6}}); }), HasSubstr("fails its checksum"));
  // The undamaged shard still reads.
  EXPECT_EQ(read_part(reader, 1, "w", shape, {{0, 0}, {4, 6}}), cut(values, shape, {0, 0}, {4, 6}));
}

// The format promises a checksum for every shard: a shard whose crc32c was taken out (here renamed
// in the rank file's header, which keeps the file's layout) is refused. A step written before
// checksums existed (index version 1) still loads, without the check.
TEST_F(CorruptionTest, AShardWithoutItsChecksumIsRefusedUnlessTheStepPredatesChecksums) {
  std::string bytes;
  {
    std::ifstream in(rank_file(1), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find("crc32c");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 6, "crc32x");
  std::ofstream(rank_file(1), std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(rank_file(1).string()), HasSubstr("tensor 'w' has no crc32c"),
                                        HasSubstr("the file was altered")));
  EXPECT_EQ(read_part(reader, 1, "w", shape, {{0, 0}, {4, 6}}), cut(values, shape, {0, 0}, {4, 6}));

  edit_index([](nlohmann::json& index) { index["version"] = 1; });
  FsCheckpointStore legacy{FsCheckpointStore::Options{false}};
  legacy.open(scratch.path().string());
  EXPECT_EQ(read_part(legacy, 1, "w", shape, {{0, 0}, shape}), values);
  edit_index([](nlohmann::json& index) { index["version"] = 3; });
  FsCheckpointStore newer{FsCheckpointStore::Options{false}};
  newer.open(scratch.path().string());
  EXPECT_THAT(error_of([&] { newer.shards(1); }), HasSubstr("version 3 is not one of 1 to 2"));
}

TEST(Crc32c, KnownValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the check value of CRC-32C
  EXPECT_EQ(crc32c("", 0), 0u);
  const std::string text = "a longer text, so the eight-byte loop and the tail both run";
  EXPECT_EQ(crc32c(text.data() + 10, text.size() - 10, crc32c(text.data(), 10)), crc32c(text.data(), text.size()))
      << "a checksum continued over two pieces equals the checksum of the whole";
}

TEST_F(CorruptionTest, TruncatedHeader) {
  fs::resize_file(rank_file(0), 20);
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(rank_file(0).string()), HasSubstr("truncated: header needs")));
  fs::resize_file(rank_file(0), 5);
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(rank_file(0).string()), HasSubstr("shorter than the 8-byte header length")));
}

TEST_F(CorruptionTest, BadHeaderJson) {
  std::fstream file(rank_file(0), std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(8);
  file << "{\"w\": [oops";
  file.close();
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(rank_file(0).string()), HasSubstr("bad header JSON")));
}

TEST_F(CorruptionTest, ShardFileThatDisagreesWithTheIndex) {
  // The two rank files swapped: each holds rows the index places in the other.
  fs::rename(rank_file(0), step_dir() / "swap");
  fs::rename(rank_file(1), rank_file(0));
  fs::rename(step_dir() / "swap", rank_file(1));
  EXPECT_THAT(read_whole_error(),
              AllOf(HasSubstr(rank_file(0).string()),
                    HasSubstr("tensor 'w' is f32 offset [4, 0] shape [4, 6] of [8, 6], index.json says f32 "
                              "offset [0, 0] shape [4, 6] of [8, 6]")));
}

TEST_F(CorruptionTest, RequestedDtypeOrShapeDiffers) {
  EXPECT_THAT(read_error(shard_info("w", shape, {{0, 0}, shape}, DType::BF16)),
              AllOf(HasSubstr(index_file().string()), HasSubstr("tensor 'w' is f32, bf16 was asked for")));
  EXPECT_THAT(read_error(shard_info("w", {8, 4}, {{0, 0}, {8, 4}})),
              AllOf(HasSubstr(index_file().string()),
                    HasSubstr("tensor 'w' has global shape [8, 6], [8, 4] was asked for")));
  EXPECT_THAT(read_error(shard_info("w", shape, {{6, 0}, {4, 6}})),
              HasSubstr("read of tensor 'w' from step 1: offset [6, 0] shape [4, 6] lies outside global shape [8, 6]"));
}

TEST_F(CorruptionTest, RegionNotCoveredByTheShards) {
  edit_index([](nlohmann::json& index) { index["tensors"]["w"]["shards"].erase(1); });
  EXPECT_THAT(read_whole_error(),
              AllOf(HasSubstr(index_file().string()),
                    HasSubstr("tensor 'w' offset [0, 0] shape [8, 6] is not fully covered by its shards "
                              "(24 of 48 elements)")));
}

TEST_F(CorruptionTest, OverlappingShardsInTheIndex) {
  edit_index([](nlohmann::json& index) { index["tensors"]["w"]["shards"][1]["offset"] = {2, 0}; });
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(index_file().string()), HasSubstr("overlap")));
}

TEST_F(CorruptionTest, UnknownTensorAndUnknownStep) {
  EXPECT_THAT(read_error(shard_info("nope", shape, {{0, 0}, shape})),
              AllOf(HasSubstr(index_file().string()), HasSubstr("no tensor 'nope' in step 1")));
  std::vector<float> out(48);
  EXPECT_THAT(error_of([&] { reader.read(9, shard_info("w", shape, {{0, 0}, shape}), out.data()); }),
              HasSubstr("step 9 is not committed in " + scratch.path().string() + " (committed steps: 1)"));
  EXPECT_THAT(error_of([&] { reader.metadata(9); }), HasSubstr("step 9 is not committed"));
}

TEST_F(CorruptionTest, BadOrMissingIndex) {
  std::ofstream(index_file(), std::ios::trunc) << "{\"format\": ";
  EXPECT_THAT(read_whole_error(), AllOf(HasSubstr(index_file().string()), HasSubstr("bad index JSON")));
  std::ofstream(index_file(), std::ios::trunc) << R"({"format": "ptdp-checkpoint", "version": 1})";
  EXPECT_THAT(error_of([&] { reader.shards(1); }), AllOf(HasSubstr(index_file().string()), HasSubstr("bad index")));
  fs::remove(index_file());
  EXPECT_THAT(error_of([&] { reader.metadata(1); }), AllOf(HasSubstr(index_file().string()), HasSubstr("missing file")));
}

TEST_F(CorruptionTest, IndexOfAnotherStep) {
  fs::rename(step_dir(), scratch.path() / FsCheckpointStore::step_folder_name(2));
  EXPECT_THAT(error_of([&] { reader.shards(2); }), HasSubstr("bad index: it describes step 1"));
}

}  // namespace
}  // namespace ptdp::ckptfs::test
