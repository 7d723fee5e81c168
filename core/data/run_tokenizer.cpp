#include "data/run_tokenizer.hpp"

#include <openssl/evp.h>

#include <filesystem>
#include <map>
#include <fstream>

#include <fmt/format.h>

#include "data/mapped_file.hpp"
#include "data/tokenizer.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> unbase64(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

std::string read_whole(const std::string& path) {
  const MappedFile file(path);
  return {reinterpret_cast<const char*>(file.data()), file.size()};
}

// A tokenizer.json's ids: model.vocab (a map for BPE and WordPiece, a list for Unigram) and
// added_tokens; the end of a document is the first of the usual end tokens it has.
TokenizerRecord huggingface_record(const std::string& path) {
  const nlohmann::json json = nlohmann::json::parse(read_whole(path), nullptr, false);
  if (!json.is_object() || !json.contains("model") || !json["model"].contains("vocab"))
    throw Error(path + ": not a Hugging Face tokenizer.json (no model.vocab)");
  std::map<std::string, int64_t> ids;
  const nlohmann::json& vocab = json["model"]["vocab"];
  if (vocab.is_object())
    for (const auto& [piece, id] : vocab.items()) ids[piece] = id.get<int64_t>();
  else
    for (size_t i = 0; i < vocab.size(); ++i) ids[vocab[i].at(0).get<std::string>()] = static_cast<int64_t>(i);
  for (const nlohmann::json& added : json.value("added_tokens", nlohmann::json::array()))
    ids[added.at("content").get<std::string>()] = added.at("id").get<int64_t>();
  TokenizerRecord record{"huggingface", std::filesystem::path(path).filename().string(), file_sha256(path), 0, {}};
  for (const auto& [piece, id] : ids) record.vocab = std::max(record.vocab, id + 1);
  for (const char* end : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"})
    if (auto it = ids.find(end); it != ids.end() && !record.eod) record.eod = static_cast<int32_t>(it->second);
  return record;
}

}  // namespace

TokenizerRecord tokenizer_file_record(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".json") return huggingface_record(path);
  return open_tokenizer(path)->record();
}

nlohmann::json RunTokenizer::json() const {
  nlohmann::json out = nlohmann::json::parse(record.json());
  if (!file.empty()) out["file_base64"] = base64(file);
  return out;
}

RunTokenizer RunTokenizer::from_json(const nlohmann::json& json, const std::string& where) {
  RunTokenizer out;
  nlohmann::json record = json;
  record.erase("file_base64");
  out.record = TokenizerRecord::parse(record.dump(), where);
  if (json.contains("file_base64")) {
    const auto bytes = json["file_base64"].is_string() ? unbase64(json["file_base64"].get<std::string>()) : std::nullopt;
    if (!bytes) throw Error(where + ": malformed tokenizer record: \"file_base64\" is not base64");
    out.file = *bytes;
  }
  return out;
}

void RunTokenizer::write_file(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out.write(file.data(), static_cast<std::streamsize>(file.size()));
  if (!out.flush()) throw Error(path + ": cannot write");
}

void check_resumed_tokenizer(const nlohmann::json& step_metadata, const std::optional<RunTokenizer>& run,
                             const std::string& where) {
  if (!run || !step_metadata.is_object() || !step_metadata.contains("tokenizer")) return;
  const RunTokenizer saved = RunTokenizer::from_json(step_metadata["tokenizer"], where);
  if (!saved.record.same_tokenizer(run->record))
    throw Error(fmt::format("{}: the model was trained on tokens of {}, and this run's data are tokens of {}", where,
                            saved.record.describe(), run->record.describe()));
}

std::optional<RunTokenizer> run_tokenizer(const RunConfig& config, const RunData& data) {
  std::optional<TokenizerRecord> recorded;
  std::string recorded_by;
  auto note = [&](const TokenCorpus& corpus) {
    if (auto r = corpus.tokenizer(); r && !recorded) {
      recorded = r;
      recorded_by = corpus.name();
    }
  };
  for (const SamplerSource& source : data.train) note(source.corpus);
  if (data.validation) note(*data.validation);
  if (config.data.tokenizer.empty()) {
    if (!recorded) return std::nullopt;
    return RunTokenizer{*recorded, ""};
  }
  const std::string& path = config.data.tokenizer;
  RunTokenizer out{tokenizer_file_record(path), read_whole(path)};
  if (recorded && !recorded->same_tokenizer(out.record))
    throw Error(fmt::format("data.tokenizer: {} is {}, but {} holds tokens of {}", path, out.record.describe(),
                            recorded_by, recorded->describe()));
  if (out.record.vocab > config.model.vocab)
    throw Error(fmt::format("data.tokenizer: {} has a vocabulary of {} ids, larger than model.vocab = {}", path,
                            out.record.vocab, config.model.vocab));
  return out;
}

}  // namespace ptdp
