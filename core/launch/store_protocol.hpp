#pragma once
// Wire format of the rendezvous store: every message is a frame, a u32 byte count followed by
// that many bytes, integers in network byte order.
//   request:  u8 op, u32 key length, key, then  Set: the value | Get: u64 timeout ms | Add: i64 delta
//   response: u8 status, then  Ok: the value (Get) or the i64 sum (Add) | Failed: a message
#include <cstdint>
#include <string>
#include <vector>

#include "launch/socket_io.hpp"

namespace ptdp::store_protocol {

enum class Op : uint8_t { Set = 1, Get = 2, Add = 3 };
enum class Status : uint8_t { Ok = 0, TimedOut = 1, Failed = 2 };

// Frames above this size are refused: a corrupt length must not allocate gigabytes.
inline constexpr uint32_t kMaxFrameBytes = 1u << 30;

class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& u32(uint32_t v);
  Writer& u64(uint64_t v);
  Writer& bytes(const void* data, size_t size);
  Writer& string(const std::string& s);  // u32 length + bytes
  const std::vector<uint8_t>& data() const { return data_; }

 private:
  std::vector<uint8_t> data_;
};

// Reads a frame's fields; any read past the end throws ptdp::Error.
class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& data) : data_(data) {}
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  std::string string();
  std::vector<uint8_t> rest();

 private:
  const uint8_t* take(size_t n);
  const std::vector<uint8_t>& data_;
  size_t pos_ = 0;
};

// Sends one frame; returns the I/O result (Closed when the peer went away).
net::IoResult send_frame(int fd, const std::vector<uint8_t>& body, net::Clock::time_point deadline);
// Receives one frame into body.
net::IoResult recv_frame(int fd, std::vector<uint8_t>& body, net::Clock::time_point deadline,
                         uint32_t max_bytes = kMaxFrameBytes);

}  // namespace ptdp::store_protocol
