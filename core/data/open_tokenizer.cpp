#include <filesystem>

#include "data/tokenizer.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path);

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw Error(path + ": cannot open: no such tokenizer file");
  if (std::filesystem::path(path).extension() == ".json")
    throw Error(path + ": a Hugging Face tokenizer; encode with it through scripts/encode_hf.py (the `tokenizers` "
                "library has no C++ API), which writes the same ptdp files");
  return open_sentencepiece(path);
}

}  // namespace ptdp
