#include "launch/rendezvous_secret.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ptdp/error.hpp"

namespace ptdp {
namespace {

constexpr size_t kMaxSecretBytes = 4096;

std::string read_secret_file(const std::string& path) {
  const std::string who = std::string("rendezvous: ") + kRendezvousSecretFileVariable + "=" + path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(who + "cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(who + "not a regular file");
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    ::close(fd);
    throw Error(who + "other users may read it (mode " + std::to_string((st.st_mode >> 6) & 7) +
                std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) +
                "); chmod 600 it, since whoever holds the secret can join the job");
  }
  std::string secret(kMaxSecretBytes + 1, '\0');
  const ssize_t n = ::read(fd, secret.data(), secret.size());
  ::close(fd);
  if (n < 0) throw Error(who + "cannot read: " + std::strerror(errno));
  if (static_cast<size_t>(n) > kMaxSecretBytes) throw Error(who + "more than 4 KiB: not a secret file");
  secret.resize(static_cast<size_t>(n));
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) throw Error(who + "empty");
  return secret;
}

}  // namespace

std::optional<std::string> rendezvous_secret() {
  if (const char* value = std::getenv(kRendezvousSecretVariable); value && *value) return std::string(value);
  if (const char* file = std::getenv(kRendezvousSecretFileVariable); file && *file) return read_secret_file(file);
  return std::nullopt;
}

std::string new_rendezvous_secret() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("rendezvous: getrandom(): ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) hex += {digits[b >> 4], digits[b & 15]};
  return hex;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace ptdp
