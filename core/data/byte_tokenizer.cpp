#include "data/tokenizer.hpp"

namespace ptdp {

namespace {

class ByteTokenizer final : public Tokenizer {
 public:
  const TokenizerRecord& record() const override { return record_; }
  void encode(std::string_view text, std::vector<int32_t>& out) const override {
    for (char c : text) out.push_back(static_cast<uint8_t>(c));
  }
  std::string decode(std::span<const int32_t> tokens) const override {
    std::string text;
    for (int32_t token : tokens) text += static_cast<char>(static_cast<uint8_t>(token));
    return text;
  }
  bool needs_utf8() const override { return false; }

 private:
  TokenizerRecord record_ = TokenizerRecord::bytes();
};

}  // namespace

std::unique_ptr<Tokenizer> byte_tokenizer() { return std::make_unique<ByteTokenizer>(); }

}  // namespace ptdp
