#include "data/tokenizer_record.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "data/mapped_file.hpp"
#include "launch/hmac_sha256.hpp"
#include "ptdp/error.hpp"
#include "ptdp/message_text.hpp"

namespace ptdp {

std::string TokenizerRecord::json() const {
  nlohmann::ordered_json out = {{"kind", kind}, {"name", name}, {"sha256", sha256}, {"vocab", vocab}};
  out["eod"] = eod ? nlohmann::ordered_json(*eod) : nlohmann::ordered_json(nullptr);
  return out.dump();
}

TokenizerRecord TokenizerRecord::parse(const std::string& json, const std::string& where) {
  const nlohmann::json in = nlohmann::json::parse(json, nullptr, false);
  auto fail = [&](const std::string& reason) -> TokenizerRecord {
    throw Error(where + ": malformed tokenizer record: " + reason);
  };
  if (!in.is_object()) return fail("not a JSON object");
  TokenizerRecord record;
  for (auto [key, field] : {std::pair{"kind", &record.kind}, {"name", &record.name}, {"sha256", &record.sha256}}) {
    if (!in.contains(key) || !in[key].is_string()) return fail(fmt::format("\"{}\" is not a string", key));
    *field = in[key].get<std::string>();
  }
  if (record.kind != "bytes" && record.kind != "sentencepiece" && record.kind != "huggingface")
    return fail("unknown kind \"" + record.kind + "\"");
  if (!in.contains("vocab") || !in["vocab"].is_number_integer() || in["vocab"].get<int64_t>() < 1)
    return fail("\"vocab\" is not a positive integer");
  record.vocab = in["vocab"].get<int64_t>();
  if (in.contains("eod") && !in["eod"].is_null()) {
    if (!in["eod"].is_number_integer() || in["eod"].get<int64_t>() < 0 || in["eod"].get<int64_t>() >= record.vocab)
      return fail("\"eod\" is not a token of the vocabulary");
    record.eod = in["eod"].get<int32_t>();
  }
  return record;
}

std::string TokenizerRecord::describe() const {
  std::string out = kind == "bytes" ? "byte-level" : kind + " " + excerpt(name);
  out += fmt::format(" (vocab {}", vocab);
  if (eod) out += fmt::format(", end of document {}", *eod);
  if (!sha256.empty()) out += ", sha256 " + sha256.substr(0, 12) + "…";
  return out + ")";
}

std::string file_sha256(const std::string& path) {
  const MappedFile file(path);
  const Sha256Digest digest = sha256({reinterpret_cast<const char*>(file.data()), file.size()});
  std::string hex;
  for (uint8_t byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

}  // namespace ptdp
