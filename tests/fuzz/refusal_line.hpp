#pragma once
// What every fuzz case holds its outcome to: a refusal is one line of at most a few hundred
// characters that names the file, never a library's own text (a JSON exception's, a stream's, an
// allocation failure's).
#include <gtest/gtest.h>

#include <string>

namespace ptdp::fuzz {

inline constexpr size_t kMaxRefusalChars = 600;

// `message`: what a refusal said; `file`: what it must name; `label`: the case, for a failure.
inline void expect_clean_refusal(const std::string& message, const std::string& file, const std::string& label) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << label << ": more than one line: " << message.substr(0, 2000);
  EXPECT_LE(message.size(), kMaxRefusalChars) << label << ": " << message.substr(0, 2000);
  EXPECT_NE(message.find(file), std::string::npos) << label << ": does not name " << file << ": "
                                                   << message.substr(0, 2000);
  for (const char* raw : {"json.exception", "basic_filebuf", "bad_alloc", "std::", "terminate"})
    EXPECT_EQ(message.find(raw), std::string::npos) << label << ": library text '" << raw
                                                    << "': " << message.substr(0, 2000);
}

}  // namespace ptdp::fuzz
