#pragma once
// Writes a ptdp token file. The file appears under its name only when complete: it is written
// to "<path>.tmp" and renamed, so a failure never leaves a partial file or clobbers an existing one.
#include <cstdint>
#include <span>
#include <string>

#include "data/token_file_format.hpp"

namespace ptdp {

// Throws ptdp::Error "<path>: <reason>" when a token does not fit `dtype` or the file cannot be
// written; `path` is then as it was before the call and no "<path>.tmp" is left behind.
void write_token_file(const std::string& path, std::span<const int32_t> tokens, TokenDType dtype);

}  // namespace ptdp
