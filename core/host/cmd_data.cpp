// ptdp-host data: make and inspect token files.
//   data encode TEXT OUT   byte-level tokens (vocab 256) of any file, written in the ptdp format
//   data info FILE         format, dtype, token count and largest token of a data file
#include <fmt/format.h>

#include <string>
#include <vector>

#include "command_registry.hpp"
#include "data/token_dataset.hpp"
#include "data/token_file_writer.hpp"
#include "ptdp/error.hpp"

namespace ptdp::host {
namespace {

struct EncodeOptions {
  std::string text, out, dtype = "u8";
};

void encode(const EncodeOptions& options) {
  auto dtype = parse_token_dtype(options.dtype);
  if (!dtype) throw Error("--dtype: unknown dtype '" + options.dtype + "' (expected u8, u16 or i32)");
  auto text = TokenDataset::open(options.text, "text");
  std::vector<int32_t> tokens(static_cast<size_t>(text.size()));
  text.read(0, text.size(), tokens.data());
  write_token_file(options.out, tokens, *dtype);
  fmt::print("{}: {} tokens ({}, byte-level, vocab 256) from {}\n", options.out, tokens.size(),
             token_dtype_name(*dtype), options.text);
}

void info(const std::string& path, const std::string& format) {
  auto dataset = TokenDataset::open(path, format);
  fmt::print("file     {}\n", path);
  fmt::print("format   {}\n", token_file_format_name(dataset.format()));
  fmt::print("dtype    {}\n", token_dtype_name(dataset.dtype()));
  fmt::print("tokens   {}\n", dataset.size());
  fmt::print("max      {} (needs model.vocab >= {})\n", dataset.max_token(), dataset.max_token() + 1);
}

void add_data_command(CLI::App& root) {
  auto* command = root.add_subcommand("data", "Make and inspect token files");
  command->require_subcommand(1);

  auto encode_options = std::make_shared<EncodeOptions>();
  auto* encode_command =
      command->add_subcommand("encode", "Write the bytes of TEXT as tokens (vocab 256) to OUT, in the ptdp format");
  encode_command->add_option("TEXT", encode_options->text, "Input file (any bytes)")->required();
  encode_command->add_option("OUT", encode_options->out, "Token file to write; replaced only when complete")
      ->required();
  encode_command->add_option("--dtype", encode_options->dtype, "Stored token width: u8, u16 or i32")
      ->capture_default_str();
  encode_command->callback([encode_options] { encode(*encode_options); });

  auto path = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("auto");
  auto* info_command = command->add_subcommand("info", "Describe a data file: format, dtype, tokens, largest token");
  info_command->add_option("FILE", *path, "Token file (ptdp, llm.c shard) or text")->required();
  info_command->add_option("--format", *format, "auto, ptdp, llmc or text")->capture_default_str();
  info_command->callback([path, format] { info(*path, *format); });
}

const RegisterHostCommand registration{{"data", 60, add_data_command}};

}  // namespace
}  // namespace ptdp::host
