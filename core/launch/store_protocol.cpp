#include "launch/store_protocol.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "ptdp/error.hpp"

namespace ptdp::store_protocol {

Writer& Writer::u8(uint8_t v) {
  data_.push_back(v);
  return *this;
}

Writer& Writer::u32(uint32_t v) {
  uint32_t n = htonl(v);
  return bytes(&n, sizeof(n));
}

Writer& Writer::u64(uint64_t v) {
  u32(static_cast<uint32_t>(v >> 32));
  return u32(static_cast<uint32_t>(v));
}

Writer& Writer::bytes(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  data_.insert(data_.end(), p, p + size);
  return *this;
}

Writer& Writer::string(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  return bytes(s.data(), s.size());
}

const uint8_t* Reader::take(size_t n) {
  if (data_.size() - pos_ < n) throw Error("rendezvous: malformed store message (truncated)");
  const uint8_t* p = data_.data() + pos_;
  pos_ += n;
  return p;
}

uint8_t Reader::u8() { return *take(1); }

uint32_t Reader::u32() {
  uint32_t n;
  std::memcpy(&n, take(sizeof(n)), sizeof(n));
  return ntohl(n);
}

uint64_t Reader::u64() {
  uint64_t hi = u32();
  return (hi << 32) | u32();
}

std::string Reader::string() {
  uint32_t size = u32();
  const uint8_t* p = take(size);
  return std::string(reinterpret_cast<const char*>(p), size);
}

std::vector<uint8_t> Reader::rest() {
  std::vector<uint8_t> out(data_.begin() + static_cast<std::ptrdiff_t>(pos_), data_.end());
  pos_ = data_.size();
  return out;
}

net::IoResult send_frame(int fd, const std::vector<uint8_t>& body, net::Clock::time_point deadline) {
  // One write per frame: a separate length write would meet Nagle and delayed ACKs.
  Writer frame;
  frame.u32(static_cast<uint32_t>(body.size())).bytes(body.data(), body.size());
  return net::send_all(fd, frame.data().data(), frame.data().size(), deadline);
}

net::IoResult recv_frame(int fd, std::vector<uint8_t>& body, net::Clock::time_point deadline, uint32_t max_bytes) {
  uint32_t size = 0;
  net::IoResult r = net::recv_all(fd, &size, sizeof(size), deadline);
  if (r != net::IoResult::Done) return r;
  size = ntohl(size);
  if (size > max_bytes)
    throw Error("rendezvous: store message of " + std::to_string(size) + " bytes exceeds its limit of " +
                std::to_string(max_bytes));
  body.resize(size);
  return net::recv_all(fd, body.data(), size, deadline);
}

}  // namespace ptdp::store_protocol
