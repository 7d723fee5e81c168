#pragma once
// FileRendezvous: the rendezvous store as a directory that every rank can see. A key is one
// file, written under a temporary name and renamed into place, so a reader never sees half a
// value. Enough to bootstrap NCCL between processes without the core's TCP store.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "ptdp/rendezvous.hpp"

class FileRendezvous final : public ptdp::Rendezvous {
 public:
  explicit FileRendezvous(std::filesystem::path directory);
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;

 private:
  std::filesystem::path path_of(const std::string& key) const;
  std::filesystem::path directory_;
};
