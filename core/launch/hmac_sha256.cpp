#include "launch/hmac_sha256.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "ptdp/error.hpp"

namespace ptdp {

Sha256Digest sha256(std::string_view message) {
  Sha256Digest digest{};
  SHA256(reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data());
  return digest;
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
  Sha256Digest digest{};
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data(), &length) ||
      length != digest.size())
    throw Error("rendezvous: HMAC-SHA256 failed in OpenSSL");
  return digest;
}

bool digests_equal(const Sha256Digest& a, const Sha256Digest& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

}  // namespace ptdp
