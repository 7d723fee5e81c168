#include "file_rendezvous.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <thread>

#include "ptdp/error.hpp"

FileRendezvous::FileRendezvous(std::filesystem::path directory) : directory_(std::move(directory)) {
  std::filesystem::create_directories(directory_);
}

// Keys hold '/' and other characters a file name cannot: the name is the key in hex.
std::filesystem::path FileRendezvous::path_of(const std::string& key) const {
  static const char digits[] = "0123456789abcdef";
  std::string name;
  for (unsigned char c : key) {
    name += digits[c >> 4];
    name += digits[c & 15];
  }
  return directory_ / name;
}

void FileRendezvous::set(const std::string& key, const std::vector<uint8_t>& value) {
  static std::atomic<int> counter{0};
  const std::filesystem::path temporary =
      directory_ / (".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
    if (!out) throw ptdp::Error("rendezvous: cannot write " + temporary.string());
  }
  std::filesystem::rename(temporary, path_of(key));
}

std::vector<uint8_t> FileRendezvous::get(const std::string& key, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::filesystem::path path = path_of(key);
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw ptdp::Error("rendezvous: key '" + key + "' did not appear in " + directory_.string() +
                        " within " + std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
