#include "step_tokenizer.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ptdp/error.hpp"

namespace ptdp::host {

StepTokenizer::StepTokenizer(const nlohmann::json& metadata, const std::string& source) {
  std::string pattern = (std::filesystem::temp_directory_path() / "ptdp-step-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error(pattern + ": cannot create a temporary folder: " + std::strerror(errno));
  folder_ = pattern;
  if (!metadata.contains("tokenizer")) return;
  recorded_ = RunTokenizer::from_json(metadata["tokenizer"], source);
  if (recorded_->record.kind != "sentencepiece" || recorded_->file.empty()) return;
  const std::string model = folder_ + "/" + recorded_->record.name;
  recorded_->write_file(model);
  tokenizer_ = open_tokenizer(model);
}

StepTokenizer::~StepTokenizer() {
  std::error_code ec;
  std::filesystem::remove_all(folder_, ec);
}

}  // namespace ptdp::host
