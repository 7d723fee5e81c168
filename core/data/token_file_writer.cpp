#include "data/token_file_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

constexpr uint8_t kZeros[8] = {};

size_t header_bytes(TokenFileLayout layout, const std::string& tokenizer_json) {
  switch (layout) {
    case TokenFileLayout::Ptdp: return kPtdpHeaderBytes;
    case TokenFileLayout::PtdpIndexed: return kPtdpIndexedHeaderBytes + padded_to_8(tokenizer_json.size());
    case TokenFileLayout::Llmc: return kLlmcHeaderBytes;
  }
  return 0;
}

template <class T>
void narrow(std::span<const int32_t> tokens, int64_t first_index, TokenDType dtype, const std::string& path,
            std::vector<uint8_t>& out) {
  out.resize(tokens.size() * sizeof(T));
  const int64_t max = token_dtype_max(dtype);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > max)
      throw Error(path + ": token " + std::to_string(tokens[i]) + " at index " +
                  std::to_string(first_index + static_cast<int64_t>(i)) + " does not fit dtype " +
                  token_dtype_name(dtype) + " (0.." + std::to_string(max) + ")");
    T value = static_cast<T>(tokens[i]);
    std::memcpy(out.data() + i * sizeof(T), &value, sizeof(T));
  }
}

}  // namespace

TokenFileWriter::TokenFileWriter(std::string path, TokenFileLayout layout, TokenDType dtype, TokenizerRecord tokenizer)
    : path_(std::move(path)), temporary_(path_ + ".tmp"), layout_(layout),
      dtype_(layout == TokenFileLayout::Llmc ? TokenDType::U16 : dtype), tokenizer_(std::move(tokenizer)) {
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (!file_) throw Error(path_ + ": cannot create " + temporary_ + ": " + std::strerror(errno));
  // The header is written last, once the counts are known; the tokens start after its room.
  const std::vector<uint8_t> room(header_bytes(layout_, tokenizer_.json()), 0);
  write(room.data(), room.size());
}

TokenFileWriter::~TokenFileWriter() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(temporary_.c_str());
}

void TokenFileWriter::fail(const std::string& what) const {
  throw Error(path_ + ": cannot " + what + " " + temporary_ + ": " + std::strerror(errno));
}

void TokenFileWriter::write(const void* data, size_t bytes) {
  if (std::fwrite(data, 1, bytes, file_) != bytes) fail("write");
}

void TokenFileWriter::add_document(std::span<const int32_t> tokens) {
  PTDP_CHECK(file_, path_ + ": a document added after finish()");
  // Converted in chunks so a large document never needs a second full-size copy in memory.
  constexpr size_t kChunk = 1 << 16;
  for (size_t first = 0; first < tokens.size(); first += kChunk) {
    const auto chunk = tokens.subspan(first, std::min(kChunk, tokens.size() - first));
    const int64_t index = count_ + static_cast<int64_t>(first);
    switch (dtype_) {
      case TokenDType::U8: narrow<uint8_t>(chunk, index, dtype_, path_, bytes_); break;
      case TokenDType::U16: narrow<uint16_t>(chunk, index, dtype_, path_, bytes_); break;
      case TokenDType::I32: narrow<int32_t>(chunk, index, dtype_, path_, bytes_); break;
    }
    write(bytes_.data(), bytes_.size());
  }
  starts_.push_back(count_);
  count_ += static_cast<int64_t>(tokens.size());
}

void TokenFileWriter::finish() {
  if (count_ == 0) throw Error(path_ + ": no tokens to write");
  const std::string record = tokenizer_.json();
  if (layout_ == TokenFileLayout::PtdpIndexed) {
    write(kZeros, padded_to_8(static_cast<size_t>(count_) * token_dtype_size(dtype_)) -
                      static_cast<size_t>(count_) * token_dtype_size(dtype_));
    std::vector<uint64_t> index(starts_.begin(), starts_.end());
    index.push_back(static_cast<uint64_t>(count_));
    write(index.data(), index.size() * sizeof(uint64_t));
  }
  if (std::fseek(file_, 0, SEEK_SET) != 0) fail("write");
  if (layout_ == TokenFileLayout::Llmc) {
    if (count_ > INT32_MAX) throw Error(path_ + ": an llm.c shard holds at most 2^31 - 1 tokens");
    const int32_t header[3] = {kLlmcMagic, kLlmcVersion, static_cast<int32_t>(count_)};
    write(header, sizeof header);
  } else {
    PtdpIndexedHeader header{};
    std::memcpy(header.base.magic, kPtdpMagic, sizeof kPtdpMagic);
    header.base.version = layout_ == TokenFileLayout::Ptdp ? kPtdpVersion : kPtdpIndexedVersion;
    header.base.dtype = static_cast<uint32_t>(dtype_);
    header.base.count = static_cast<uint64_t>(count_);
    header.documents = starts_.size();
    header.tokenizer_bytes = record.size();
    if (layout_ == TokenFileLayout::Ptdp) {
      write(&header.base, sizeof header.base);
    } else {
      write(&header, sizeof header);
      write(record.data(), record.size());
    }
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) fail("write");
}

void TokenFileWriter::commit() {
  PTDP_CHECK(!file_, path_ + ": commit() before finish()");
  std::error_code ec;
  std::filesystem::rename(temporary_, path_, ec);
  if (ec) throw Error(path_ + ": cannot rename " + temporary_ + " into place: " + ec.message());
  committed_ = true;
}

void write_token_file(const std::string& path, std::span<const int32_t> tokens, TokenDType dtype) {
  if (tokens.empty()) throw Error(path + ": no tokens to write");
  TokenFileWriter writer(path, TokenFileLayout::Ptdp, dtype, TokenizerRecord::bytes());
  writer.add_document(tokens);
  writer.finish();
  writer.commit();
}

}  // namespace ptdp
