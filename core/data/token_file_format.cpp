#include "data/token_file_format.hpp"

#include <limits>

namespace ptdp {

size_t token_dtype_size(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::U8: return 1;
    case TokenDType::U16: return 2;
    case TokenDType::I32: return 4;
  }
  return 0;
}

const char* token_dtype_name(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::U8: return "u8";
    case TokenDType::U16: return "u16";
    case TokenDType::I32: return "i32";
  }
  return "?";
}

std::optional<TokenDType> parse_token_dtype(std::string_view name) {
  for (TokenDType dtype : {TokenDType::U8, TokenDType::U16, TokenDType::I32})
    if (name == token_dtype_name(dtype)) return dtype;
  return std::nullopt;
}

std::optional<TokenDType> token_dtype_from_code(uint32_t code) {
  for (TokenDType dtype : {TokenDType::U8, TokenDType::U16, TokenDType::I32})
    if (code == static_cast<uint32_t>(dtype)) return dtype;
  return std::nullopt;
}

int64_t token_dtype_max(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::U8: return std::numeric_limits<uint8_t>::max();
    case TokenDType::U16: return std::numeric_limits<uint16_t>::max();
    case TokenDType::I32: return std::numeric_limits<int32_t>::max();
  }
  return 0;
}

}  // namespace ptdp
