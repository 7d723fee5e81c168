#pragma once
// Encodes a corpus of documents into token files, as `ptdp-host data encode` does: every
// document's tokens then the end-of-document token, in the order of the inputs, into one file or
// into shards of a chosen size (each ending at a document boundary) and a validation file made
// of the first documents, as llm.c ships fineweb. Documents are tokenized on several threads;
// the files do not depend on how many.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/text_documents.hpp"
#include "data/token_file_writer.hpp"
#include "data/tokenizer.hpp"

namespace ptdp {

struct CorpusEncoding {
  std::string out;                // a file; with shards or a validation file, the stem of their names
  std::string json_key = "text";  // where a JSONL line keeps its text
  TokenFileLayout layout = TokenFileLayout::PtdpIndexed;
  std::string dtype = "auto";     // u8 | u16 | i32 | auto: the narrowest that holds the vocabulary
  int64_t shard_tokens = 0;       // > 0: shards of at most this many tokens
  int64_t val_tokens = 0;         // > 0: the first documents, this many tokens or just over, are the validation file
  bool append_eod = true;         // when the tokenizer has an end-of-document token
  int workers = 1;
  // Files no output may replace besides the text inputs (the tokenizer file): an output that is
  // one of them, or a folder, is refused before it is written.
  std::vector<std::string> protected_files = {};
};

struct EncodedFile {
  std::string path;
  int64_t tokens = 0, documents = 0;
};

struct EncodeProgress {
  uint64_t bytes_done = 0, bytes_total = 0;
  int64_t tokens = 0, documents = 0;
};

// The names of the files `encoding` writes, given the number of training shards: `out` itself
// without shards or a validation file, else "<stem>_val<ext>" and "<stem>_train_000000<ext>", ….
std::string validation_file_name(const std::string& out);
std::string train_shard_name(const std::string& out, int64_t shard);

// Throws ptdp::Error with one line for bad input (see read_documents and TokenFileWriter); then
// no output file is created or replaced, whichever file the problem is in: every file is written
// as "<name>.tmp" and all are renamed into place only once the whole corpus has been encoded.
std::vector<EncodedFile> encode_corpus(const std::vector<TextInput>& inputs, const Tokenizer& tokenizer,
                                       const CorpusEncoding& encoding,
                                       const std::function<void(const EncodeProgress&)>& progress);

}  // namespace ptdp
