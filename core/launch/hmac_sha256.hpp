#pragma once
// SHA-256 and HMAC-SHA256 for the rendezvous store's challenge: a rank proves it holds the job's
// secret without sending it. OpenSSL computes them (cryptography is not written by hand here);
// the tests hold the wrappers to the FIPS 180-4 and RFC 4231 test vectors.
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
