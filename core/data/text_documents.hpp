#pragma once
// The documents of a corpus, as `data encode` and `data tokenizer train` read it: a text file is
// one document; each line of a JSONL file (.jsonl or .json, as Megatron's preprocess_data.py
// reads "loose JSON") is one, its text under a key; a folder stands for the files under it, in
// name order.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ptdp {

struct TextInput {
  std::string path;
  bool jsonl = false;
  uint64_t bytes = 0;
};

// Throws ptdp::Error "<path>: <reason>" for a path that is missing, or a folder with no file.
std::vector<TextInput> list_text_inputs(const std::vector<std::string>& paths);

// A part of a document. A text file is handed over in pieces of about a mebibyte, each ending
// at a line break, so its tokenization can be spread over threads yet never depends on how many.
struct TextPiece {
  std::string_view text;
  bool ends_document = true;
  uint64_t input_offset = 0;  // bytes of the input read once this piece is done
};

// Calls `piece` for every piece of every document of `input`, in order; a piece's text is valid
// during the call only. Throws ptdp::Error "<file>:<line>: <reason>" for a JSONL line that is
// not a JSON object with a string under `json_key`, and, when `utf8` is set, for text that is
// not valid UTF-8.
void read_documents(const TextInput& input, const std::string& json_key, bool utf8,
                    const std::function<void(const TextPiece&)>& piece);

}  // namespace ptdp
