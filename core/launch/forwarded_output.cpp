#include "launch/forwarded_output.hpp"

#include <unistd.h>

#include <cerrno>

namespace ptdp {

namespace {

void write_fully(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // our own output is gone; nothing sensible to do
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

bool ForwardedOutput::pump() {
  char buffer[4096];
  ssize_t n = ::read(pipe.get(), buffer, sizeof(buffer));
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) {
    if (!partial.empty()) write_fully(target, prefix + partial + "\n");
    partial.clear();
    return false;
  }
  partial.append(buffer, static_cast<size_t>(n));
  size_t start = 0, newline;
  std::string lines;
  while ((newline = partial.find('\n', start)) != std::string::npos) {
    lines += prefix;
    lines.append(partial, start, newline + 1 - start);
    start = newline + 1;
  }
  partial.erase(0, start);
  if (!lines.empty()) write_fully(target, lines);
  return true;
}

}  // namespace ptdp
