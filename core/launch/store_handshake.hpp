#pragma once
// The first exchange on every connection to the rendezvous store, before any key is read or
// written. The server sends a fresh random challenge and says whether it requires the job's
// secret; the client answers with HMAC-SHA256(secret, challenge), so the secret never crosses
// the network and an answer seen once is useless for the next connection; the server accepts
// or refuses with a reason.
//   server: u8 version (1), u8 secret required, 32-byte challenge
//   client: u8 has proof, then the 32-byte proof
//   server: u8 status (store_protocol::Status), then a message when it refuses
#include <optional>
#include <string>

#include "launch/socket_io.hpp"

namespace ptdp::store_handshake {

// Server side. True when the client may go on; false when it was refused (told why, and the
// reason left in `refusal`) or left.
bool accept(int fd, const std::optional<std::string>& secret, net::Clock::time_point deadline,
            std::string* refusal = nullptr);

// Client side. Throws ptdp::Error saying why `where` refused or did not answer.
void offer(int fd, const std::optional<std::string>& secret, net::Clock::time_point deadline, const std::string& where);

}  // namespace ptdp::store_handshake
