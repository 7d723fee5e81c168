// ptdp-host data: make and inspect token files.
//   data encode INPUT... OUT [--tokenizer FILE]   text, JSONL or folders into token files
//   data info FILE...                             format, tokens, documents, tokenizer of data files
//   data tokenizer train CORPUS... --vocab N --out FILE   a SentencePiece vocabulary
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "command_registry.hpp"
#include "data/corpus_encoder.hpp"
#include "data/data_files.hpp"
#include "data/token_dataset.hpp"
#include "ptdp/error.hpp"

namespace ptdp::host {
namespace {

struct EncodeArgs {
  std::vector<std::string> files;  // the inputs, then OUT
  std::string tokenizer, format = "ptdp";
  CorpusEncoding encoding;
  bool no_eod = false;
};

// One line on the terminal, redrawn as the encoding moves on; nothing when stderr is not one.
class ProgressBar {
 public:
  ProgressBar() : shown_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}
  void update(const EncodeProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (!shown_ || now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double fraction = p.bytes_total ? static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total) : 1;
    const int filled = static_cast<int>(fraction * 30);
    const double rate = static_cast<double>(p.bytes_done) / std::max(seconds, 1e-3);
    const double eta = rate > 0 ? static_cast<double>(p.bytes_total - p.bytes_done) / rate : 0;
    fmt::print(stderr, "\r{:3.0f}% [{}{}] {:.1f}/{:.1f} MiB | {} tokens | {} documents | {:.1f} MiB/s | ETA {:.0f} s ",
               100 * fraction, std::string(filled, '#'), std::string(30 - filled, ' '), p.bytes_done / 1048576.0,
               p.bytes_total / 1048576.0, p.tokens, p.documents, rate / 1048576.0, eta);
    drawn_ = true;
  }
  ~ProgressBar() {
    if (drawn_) fmt::print(stderr, "\n");
  }

 private:
  bool shown_, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_{};
};

void encode(EncodeArgs args) {
  if (args.files.size() < 2) throw Error("data encode: give the inputs, then the file to write");
  CorpusEncoding& encoding = args.encoding;
  encoding.out = args.files.back();
  args.files.pop_back();
  if (args.format == "llmc") encoding.layout = TokenFileLayout::Llmc;
  else if (args.format != "ptdp") throw Error("--format: unknown format '" + args.format + "' (expected ptdp or llmc)");
  encoding.append_eod = !args.no_eod;
  if (!args.tokenizer.empty()) encoding.protected_files.push_back(args.tokenizer);
  if (encoding.workers < 1) encoding.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::unique_ptr<Tokenizer> tokenizer = args.tokenizer.empty() ? byte_tokenizer() : open_tokenizer(args.tokenizer);
  const std::vector<TextInput> inputs = list_text_inputs(args.files);
  const auto start = std::chrono::steady_clock::now();
  std::vector<EncodedFile> written;
  {
    ProgressBar bar;
    written = encode_corpus(inputs, *tokenizer, encoding, [&](const EncodeProgress& p) { bar.update(p); });
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t tokens = 0, documents = 0;
  for (const EncodedFile& file : written) {
    tokens += file.tokens;
    documents += file.documents;
    fmt::print("{}: {} tokens ({}), {} document{}, {}\n", file.path, file.tokens,
               token_dtype_name(TokenDataset::open(file.path).dtype()), file.documents, file.documents == 1 ? "" : "s",
               tokenizer->record().describe());
  }
  uint64_t bytes = 0;
  for (const TextInput& input : inputs) bytes += input.bytes;
  fmt::print("{} tokens, {} document{} in {} file{} from {} input{} ({:.1f} MiB, {:.2f} bytes per token) in {:.1f} s\n",
             tokens, documents, documents == 1 ? "" : "s", written.size(), written.size() == 1 ? "" : "s", inputs.size(),
             inputs.size() == 1 ? "" : "s", bytes / 1048576.0, static_cast<double>(bytes) / static_cast<double>(tokens),
             seconds);
}

void info(const std::vector<std::string>& entries, const std::string& format) {
  int64_t tokens = 0, files = 0;
  for (const std::string& entry : entries)
    for (const std::string& path : data_files(entry, "data info")) {
      const auto dataset = TokenDataset::open(path, format);
      if (files++) fmt::print("\n");
      fmt::print("file     {}\n", path);
      fmt::print("format   {}\n", token_file_format_name(dataset.format()));
      fmt::print("dtype    {}\n", token_dtype_name(dataset.dtype()));
      fmt::print("tokens   {}\n", dataset.size());
      if (dataset.documents()) fmt::print("docs     {}\n", *dataset.documents());
      if (dataset.tokenizer()) fmt::print("made by  {}\n", dataset.tokenizer()->describe());
      else if (dataset.format() == TokenFileFormat::Text) fmt::print("made by  byte-level (each byte a token)\n");
      else fmt::print("made by  not recorded\n");
      fmt::print("max      {} (needs model.vocab >= {})\n", dataset.max_token(), dataset.max_token() + 1);
      tokens += dataset.size();
    }
  if (files > 1) fmt::print("\n{} files, {} tokens\n", files, tokens);
}

struct TrainArgs {
  std::vector<std::string> corpus;
  std::string out, type = "bpe", json_key = "text";
  int vocab = 0;
};

void add_data_command(CLI::App& root) {
  auto* command = root.add_subcommand("data", "Make and inspect token files and tokenizers");
  command->require_subcommand(1);

  auto encode_args = std::make_shared<EncodeArgs>();
  auto* encode_command = command->add_subcommand(
      "encode", "Tokenize text files, JSONL files or folders of them into token files (docs/data-format.md)");
  encode_command->add_option("FILES", encode_args->files, "The inputs, then the token file to write (OUT)")
      ->required()
      ->expected(2, -1);
  encode_command->add_option("--tokenizer", encode_args->tokenizer,
                             "A SentencePiece model (data tokenizer train); none: byte-level tokens, vocab 256");
  encode_command->add_option("--json-key", encode_args->encoding.json_key, "Where a JSONL line keeps its text")
      ->capture_default_str();
  encode_command->add_option("--format", encode_args->format, "ptdp (with a document index) or llmc (llm.c shards)")
      ->capture_default_str();
  encode_command->add_option("--dtype", encode_args->encoding.dtype,
                             "Stored token width: auto (the narrowest for the vocabulary), u8, u16 or i32")
      ->capture_default_str();
  encode_command->add_option("--shard-tokens", encode_args->encoding.shard_tokens,
                             "Shards of at most this many tokens, OUT_train_000000.bin, … (llm.c: 100000000)")
      ->check(CLI::PositiveNumber);
  encode_command->add_option("--val-tokens", encode_args->encoding.val_tokens,
                             "The first documents, this many tokens, go to OUT_val.bin")
      ->check(CLI::PositiveNumber);
  encode_command->add_flag("--no-eod", encode_args->no_eod, "Do not end each document with the tokenizer's end token");
  encode_args->encoding.workers = 0;
  encode_command->add_option("--workers", encode_args->encoding.workers, "Threads that tokenize; 0: every core")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  encode_command->callback([encode_args] { encode(*encode_args); });

  auto paths = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("auto");
  auto* info_command =
      command->add_subcommand("info", "Describe data files: format, dtype, tokens, documents, tokenizer, largest token");
  info_command->add_option("FILE", *paths, "Token files (ptdp, llm.c shards), text, or globs of them")->required();
  info_command->add_option("--format", *format, "auto, ptdp, llmc or text")->capture_default_str();
  info_command->callback([paths, format] { info(*paths, *format); });

  auto* tokenizer_command = command->add_subcommand("tokenizer", "Train subword vocabularies");
  tokenizer_command->require_subcommand(1);
  auto train_args = std::make_shared<TrainArgs>();
  auto* train_command = tokenizer_command->add_subcommand("train", "Train a SentencePiece BPE or unigram vocabulary");
  train_command->add_option("CORPUS", train_args->corpus, "Text files, JSONL files or folders")->required();
  train_command->add_option("--vocab", train_args->vocab, "Pieces in the vocabulary (model.vocab of the runs)")->required();
  train_command->add_option("--out", train_args->out, "The model file to write, e.g. tok.model")->required();
  train_command->add_option("--type", train_args->type, "bpe or unigram")->capture_default_str();
  train_command->add_option("--json-key", train_args->json_key, "Where a JSONL line keeps its text")->capture_default_str();
  train_command->callback([train_args] {
    const TrainArgs& a = *train_args;
    train_sentencepiece(list_text_inputs(a.corpus), a.json_key, a.vocab, a.type, a.out);
    fmt::print("{}: {}\n", a.out, open_tokenizer(a.out)->record().describe());
  });
}

const RegisterHostCommand registration{{"data", 60, add_data_command}};

}  // namespace
}  // namespace ptdp::host
