#pragma once
// How a UCX tag names a message, so that communicators, collectives and user point-to-point
// traffic sharing one worker never match each other's messages:
//   bits 63..48  communicator id (kNoticeComm: failure notices between processes)
//   bits 47..32  world rank of the sender (a UCX receive matches on the tag alone)
//   bit  31      1: inside a collective, 0: user send/recv
//   bits 30..0   user tag, or the communicator's collective sequence number
// Within one collective the messages between a pair of ranks share a tag; UCX matches messages
// from one sender in order, which keeps the steps of a ring apart.
#include <cstdint>

namespace ptdp::comm_ucx {

inline constexpr uint32_t kMaxCommId = 0xfffe;
inline constexpr uint32_t kNoticeComm = 0xffff;
inline constexpr int kMaxWorldSize = 1 << 16;
inline constexpr uint32_t kMaxUserTag = 0x7fffffff;

inline constexpr uint64_t kFullMask = ~uint64_t{0};
inline constexpr uint64_t kAnySenderMask = ~(uint64_t{0xffff} << 32);

inline uint64_t make_tag(uint32_t comm, int sender_world_rank, bool collective, uint32_t low) {
  return (uint64_t{comm} << 48) | (uint64_t(static_cast<uint16_t>(sender_world_rank)) << 32) |
         (uint64_t{collective} << 31) | (low & kMaxUserTag);
}

inline int tag_sender(uint64_t tag) { return static_cast<int>((tag >> 32) & 0xffff); }

}  // namespace ptdp::comm_ucx
