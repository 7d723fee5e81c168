// Data files with mutated headers (ptdp version 1 and 2 with its tokenizer record and document
// index, llm.c shards): each one opens, or is refused in one line that names the file; opening
// never changes it. `data info` is run on every tenth.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "data/token_dataset.hpp"
#include "data/token_file_format.hpp"
#include "data/token_file_writer.hpp"
#include "file_bytes.hpp"
#include "mutations.hpp"
#include "ptdp/error.hpp"
#include "refusal_line.hpp"
#include "support/host_command.hpp"
#include "support/temp_dir.hpp"

namespace ptdp {
namespace {

constexpr int kCasesPerFormat = 150;
constexpr uint64_t kSeed = 3408;

using fuzz::read_file;
using fuzz::write_file;

struct Base {
  std::string name;
  std::string bytes;
  size_t header;  // where the header (and a version 2 file's tokenizer record) ends
};

std::vector<Base> base_files(const std::filesystem::path& dir) {
  std::vector<int32_t> tokens(300);
  std::iota(tokens.begin(), tokens.end(), 0);
  for (int32_t& t : tokens) t %= 250;
  std::vector<Base> out;

  const std::string v1 = (dir / "v1.bin").string();
  write_token_file(v1, tokens, TokenDType::U16);
  out.push_back({"ptdp version 1", read_file(v1), 24});

  const std::string v2 = (dir / "v2.bin").string();
  {
    TokenFileWriter writer(v2, TokenFileLayout::PtdpIndexed, TokenDType::U8, TokenizerRecord::bytes());
    writer.add_document(std::span<const int32_t>(tokens.data(), 100));
    writer.add_document(std::span<const int32_t>(tokens.data() + 100, 200));
    writer.finish();
    writer.commit();
  }
  const std::string v2_bytes = read_file(v2);
  uint64_t record = 0;
  std::memcpy(&record, v2_bytes.data() + 32, 8);
  out.push_back({"ptdp version 2", v2_bytes, static_cast<size_t>(40 + record)});

  const std::string llmc = (dir / "llmc.bin").string();
  {
    TokenFileWriter writer(llmc, TokenFileLayout::Llmc, TokenDType::U16, TokenizerRecord::bytes());
    writer.add_document(tokens);
    writer.finish();
    writer.commit();
  }
  out.push_back({"llm.c shard", read_file(llmc), kLlmcHeaderBytes});
  return out;
}

TEST(DataHeaderFuzz, MutatedHeadersOpenOrAreRefusedInOneLineNamingTheFile) {
  test::TempDir dir("ptdp-data-fuzz");
  fuzz::Mutator mutate(kSeed);
  int refused = 0, cases = 0;
  for (const Base& base : base_files(dir.path())) {
    for (int i = 0; i < kCasesPerFormat; ++i, ++cases) {
      const std::string label = base.name + ", case " + std::to_string(i);
      // Mostly the header, at times anywhere (the document index sits at the end).
      const std::string bytes = mutate.bytes(base.bytes, i % 4 == 3 ? 0 : base.header);
      const std::string path = (dir.path() / ("case-" + std::to_string(cases) + ".bin")).string();
      write_file(path, bytes);
      try {
        const TokenDataset dataset = TokenDataset::open(path, "auto");
        EXPECT_GT(dataset.size(), 0) << label;
      } catch (const Error& e) {
        ++refused;
        fuzz::expect_clean_refusal(e.what(), path, label);
      } catch (const std::exception& e) {
        ADD_FAILURE() << label << ": not a refusal but " << e.what();
      }
      if (i % 10 == 0) {
        const auto info = test::run_host_command(PTDP_TEST_HOST, "data info " + test::quoted(path));
        EXPECT_TRUE(info.exit_code == 0 || info.exit_code == 1) << label << ": exit " << info.exit_code;
        if (info.exit_code != 0) fuzz::expect_clean_refusal(info.output.substr(0, info.output.size() - 1), path, label);
      }
      EXPECT_EQ(read_file(path), bytes) << label << ": the file was changed";
      std::filesystem::remove(path);
    }
  }
  EXPECT_GT(refused, cases / 4);
}

}  // namespace
}  // namespace ptdp
