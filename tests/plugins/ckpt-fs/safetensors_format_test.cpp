// The rank files follow the safetensors format, read here by hand from its specification:
// u64 little-endian header length, a JSON header (dtype, shape, data_offsets per tensor and a
// string-to-string "__metadata__"), then the tensors' bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "store_test_support.hpp"

namespace ptdp::ckptfs::test {
namespace {

TEST(SafetensorsFormat, RankFileFollowsTheSpecification) {
  ScratchFolder scratch;
  FsCheckpointStore store{FsCheckpointStore::Options{}};
  store.open(scratch.path().string());
  const std::vector<int64_t> shape{8, 6};
  const std::vector<float> values = global_values(shape);
  const std::vector<float> right = cut(values, shape, {0, 3}, {8, 3});
  const std::vector<uint16_t> half{1, 2, 3};
  store.write_shard(12, 1, shard_info("w", shape, {{0, 3}, {8, 3}}), right.data());
  store.write_shard(12, 1, ShardInfo{"h", DType::BF16, {3}, {0}, {3}}, half.data());
  store.finish_rank(12, 1);

  const fs::path path = scratch.path() / FsCheckpointStore::staging_folder_name(12) / "rank-00001.safetensors";
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 8u);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[i]);
  const size_t data_start = 8 + length;
  EXPECT_EQ(data_start % 8, 0u) << "data section aligned to 8 bytes";
  ASSERT_EQ(bytes.size(), data_start + right.size() * 4 + half.size() * 2);

  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, length));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({8, 3}));
  EXPECT_EQ(header["h"]["dtype"], "BF16");
  EXPECT_EQ(header["h"]["shape"], nlohmann::json({3}));
  for (const auto& [key, value] : header["__metadata__"].items()) EXPECT_TRUE(value.is_string()) << key;
  const nlohmann::json ptdp = nlohmann::json::parse(header["__metadata__"]["ptdp"].get<std::string>());
  EXPECT_EQ(ptdp["step"], 12);
  EXPECT_EQ(ptdp["rank"], 1);
  EXPECT_EQ(ptdp["shards"]["w"]["global_shape"], nlohmann::json({8, 6}));
  EXPECT_EQ(ptdp["shards"]["w"]["offset"], nlohmann::json({0, 3}));

  const auto w_range = header["w"]["data_offsets"].get<std::vector<size_t>>();
  std::vector<float> w_back(right.size());
  ASSERT_EQ(w_range[1] - w_range[0], w_back.size() * 4);
  std::memcpy(w_back.data(), bytes.data() + data_start + w_range[0], w_back.size() * 4);
  EXPECT_EQ(w_back, right);
  const auto h_range = header["h"]["data_offsets"].get<std::vector<size_t>>();
  std::vector<uint16_t> h_back(half.size());
  std::memcpy(h_back.data(), bytes.data() + data_start + h_range[0], h_back.size() * 2);
  EXPECT_EQ(h_back, half);
}

}  // namespace
}  // namespace ptdp::ckptfs::test
