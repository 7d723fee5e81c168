#include "data/corpus_encoder.hpp"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>

#include "data/output_guard.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// Text is tokenized in batches of about this many bytes per worker.
constexpr size_t kBatchBytesPerWorker = 4 << 20;

TokenDType choose_dtype(const CorpusEncoding& encoding, int64_t vocab) {
  if (encoding.layout == TokenFileLayout::Llmc) {
    if (encoding.dtype != "auto" && encoding.dtype != "u16")
      throw Error("--dtype " + encoding.dtype + ": llm.c shards store uint16 tokens");
    if (vocab > 65536)
      throw Error(fmt::format("--format llmc: llm.c shards store uint16 tokens, and the tokenizer's vocabulary has {} "
                              "ids; write ptdp files instead",
                              vocab));
    return TokenDType::U16;
  }
  if (encoding.dtype == "auto") return vocab <= 256 ? TokenDType::U8 : vocab <= 65536 ? TokenDType::U16 : TokenDType::I32;
  const auto dtype = parse_token_dtype(encoding.dtype);
  if (!dtype) throw Error("--dtype: unknown dtype '" + encoding.dtype + "' (expected auto, u8, u16 or i32)");
  if (token_dtype_max(*dtype) + 1 < vocab)
    throw Error(fmt::format("--dtype {} holds tokens 0..{}, and the tokenizer's vocabulary has {} ids", encoding.dtype,
                            token_dtype_max(*dtype), vocab));
  return *dtype;
}

std::string with_suffix(const std::string& out, const std::string& suffix) {
  const std::filesystem::path path(out);
  return (path.parent_path() / (path.stem().string() + suffix + path.extension().string())).string();
}

// Routes documents, in order, to the validation file and then to the training shards.
class ShardSink {
 public:
  ShardSink(const CorpusEncoding& encoding, TokenFileLayout layout, TokenDType dtype, TokenizerRecord tokenizer,
            std::vector<std::string> protected_files)
      : encoding_(encoding), layout_(layout), dtype_(dtype), tokenizer_(std::move(tokenizer)),
        protected_(std::move(protected_files)),
        named_files_(encoding.shard_tokens > 0 || encoding.val_tokens > 0), in_validation_(encoding.val_tokens > 0) {}

  void add(std::span<const int32_t> document) {
    if (in_validation_ && current_ && current_->tokens() >= encoding_.val_tokens) {
      close();
      in_validation_ = false;
    }
    const bool full = current_ && encoding_.shard_tokens > 0 && !in_validation_ && current_->documents() > 0 &&
                      current_->tokens() + static_cast<int64_t>(document.size()) > encoding_.shard_tokens;
    if (full) close();
    if (!current_) open();
    current_->add_document(document);
  }

  std::vector<EncodedFile> commit() {
    if (in_validation_)
      throw Error(fmt::format("{}: all {} documents ({} tokens) went to the validation file (--val-tokens {}), none is "
                              "left to train on (a text file is one document; a JSONL line or a file in a folder is one)",
                              encoding_.out, current_ ? current_->documents() : 0, current_ ? current_->tokens() : 0,
                              encoding_.val_tokens));
    if (current_) close();
    if (finished_.empty()) throw Error(encoding_.out + ": no tokens to write");
    std::vector<EncodedFile> files;
    for (auto& writer : finished_) {
      writer->commit();
      files.push_back({writer->path(), writer->tokens(), writer->documents()});
    }
    return files;
  }

 private:
  void open() {
    std::string path = encoding_.out;
    if (named_files_) path = in_validation_ ? validation_file_name(encoding_.out) : train_shard_name(encoding_.out, shards_++);
    refuse_folder_as_file(path);
    refuse_output_that_is_an_input(path, protected_);
    current_ = std::make_unique<TokenFileWriter>(path, layout_, dtype_, tokenizer_);
  }
  void close() {
    current_->finish();
    finished_.push_back(std::move(current_));
  }

  const CorpusEncoding& encoding_;
  TokenFileLayout layout_;
  TokenDType dtype_;
  TokenizerRecord tokenizer_;
  std::vector<std::string> protected_;  // what no output may replace: the inputs, the tokenizer
  bool named_files_, in_validation_;
  int64_t shards_ = 0;
  std::unique_ptr<TokenFileWriter> current_;
  std::vector<std::unique_ptr<TokenFileWriter>> finished_;  // complete as "<name>.tmp", renamed by commit()
};

// Pieces of text waiting to be tokenized, with where each leaves the input.
struct Batch {
  std::vector<std::string> texts;
  std::vector<char> ends_document;
  size_t bytes = 0;
  uint64_t input_offset = 0;  // of all inputs together
};

std::vector<std::vector<int32_t>> tokenize(const Batch& batch, const Tokenizer& tokenizer, int workers) {
  std::vector<std::vector<int32_t>> tokens(batch.texts.size());
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < batch.texts.size();) {
      try {
        tokenizer.encode(batch.texts[i], tokens[i]);
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < std::min<int>(workers, static_cast<int>(batch.texts.size())); ++w) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  return tokens;
}

}  // namespace

std::string validation_file_name(const std::string& out) { return with_suffix(out, "_val"); }

std::string train_shard_name(const std::string& out, int64_t shard) {
  return with_suffix(out, fmt::format("_train_{:06d}", shard));
}

std::vector<EncodedFile> encode_corpus(const std::vector<TextInput>& inputs, const Tokenizer& tokenizer,
                                       const CorpusEncoding& encoding,
                                       const std::function<void(const EncodeProgress&)>& progress) {
  const TokenizerRecord& record = tokenizer.record();
  const TokenDType dtype = choose_dtype(encoding, record.vocab);
  TokenFileLayout layout = encoding.layout;
  // One byte-level text file is one document of its bytes and needs no index: version 1, which
  // every ptdp reads.
  if (layout == TokenFileLayout::PtdpIndexed && record.kind == "bytes" && inputs.size() == 1 && !inputs[0].jsonl &&
      encoding.shard_tokens == 0 && encoding.val_tokens == 0)
    layout = TokenFileLayout::Ptdp;
  std::vector<std::string> protected_files = encoding.protected_files;
  for (const TextInput& input : inputs) protected_files.push_back(input.path);
  ShardSink sink(encoding, layout, dtype, record, std::move(protected_files));
  const std::optional<int32_t> eod = encoding.append_eod ? record.eod : std::nullopt;

  EncodeProgress state;
  for (const TextInput& input : inputs) state.bytes_total += input.bytes;
  uint64_t inputs_done = 0;
  std::vector<int32_t> document;
  Batch batch;
  const size_t batch_bytes = kBatchBytesPerWorker * static_cast<size_t>(std::max(1, encoding.workers));
  auto flush = [&] {
    const std::vector<std::vector<int32_t>> tokens = tokenize(batch, tokenizer, encoding.workers);
    for (size_t i = 0; i < tokens.size(); ++i) {
      document.insert(document.end(), tokens[i].begin(), tokens[i].end());
      if (!batch.ends_document[i]) continue;
      if (eod) document.push_back(*eod);
      if (!document.empty()) {  // an empty document without an end token has nothing to keep
        sink.add(document);
        state.tokens += static_cast<int64_t>(document.size());
        ++state.documents;
      }
      document.clear();
    }
    state.bytes_done = batch.input_offset;
    batch = Batch{};
    if (progress) progress(state);
  };
  for (const TextInput& input : inputs) {
    read_documents(input, encoding.json_key, tokenizer.needs_utf8(), [&](const TextPiece& piece) {
      batch.texts.emplace_back(piece.text);
      batch.ends_document.push_back(piece.ends_document);
      batch.bytes += piece.text.size();
      batch.input_offset = inputs_done + piece.input_offset;
      if (batch.bytes >= batch_bytes) flush();
    });
    inputs_done += input.bytes;
  }
  if (!batch.texts.empty()) flush();
  return sink.commit();
}

}  // namespace ptdp
