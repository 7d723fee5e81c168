#pragma once
// The per-job secret that every connection to the rendezvous store must prove it holds (see
// store_handshake.hpp). A job gets it from PTDP_RENDEZVOUS_SECRET, or from a file named by
// PTDP_RENDEZVOUS_SECRET_FILE that only its owner can read (what a multi-node job under mpirun,
// srun or torchrun uses: `head -c 32 /dev/urandom > ~/.ptdp-secret; chmod 600 ~/.ptdp-secret`).
// ptdp-host's own launcher makes one per job and hands it to its ranks in the environment.
#include <optional>
#include <string>

namespace ptdp {

inline constexpr const char* kRendezvousSecretVariable = "PTDP_RENDEZVOUS_SECRET";
inline constexpr const char* kRendezvousSecretFileVariable = "PTDP_RENDEZVOUS_SECRET_FILE";

// The secret this process was given, or nullopt. Throws ptdp::Error naming the file when it
// cannot be read, is empty or over 4 KiB, or other users may read it (group or other bits).
std::optional<std::string> rendezvous_secret();

// A fresh secret: 32 bytes from the kernel's random source, as 64 hex digits.
std::string new_rendezvous_secret();

// Whether every connection to `host` stays on this machine (127.0.0.0/8, ::1, "localhost").
bool is_loopback_host(const std::string& host);

}  // namespace ptdp
