#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the rendezvous store's challenge: a rank
// proves it holds the job's secret without sending it. Written out here so that the core needs
// no cryptography library; checked against the FIPS and RFC 4231 test vectors.
#include <array>
#include <cstdint>
#include <string_view>

namespace ptdp {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view message);
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

// Compares in time that does not depend on where the digests differ.
bool digests_equal(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace ptdp
