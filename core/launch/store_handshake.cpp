#include "launch/store_handshake.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "launch/hmac_sha256.hpp"
#include "launch/store_protocol.hpp"
#include "ptdp/error.hpp"

namespace ptdp::store_handshake {
namespace {

constexpr uint8_t kVersion = 1;
constexpr size_t kChallengeBytes = 32;
// Every handshake message is small: a version, a flag and a challenge or a proof, or a verdict
// with its reason. Nothing larger is read, or allocated, before a connection has proved the secret.
constexpr uint32_t kMaxHandshakeBytes = 1024;

std::string random_challenge() {
  std::string challenge(kChallengeBytes, '\0');
  size_t got = 0;
  while (got < challenge.size()) {
    const ssize_t n = ::getrandom(challenge.data() + got, challenge.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("rendezvous: getrandom(): ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  return challenge;
}

// Bound to this protocol, so a proof made for anything else never passes here.
Sha256Digest proof_of(const std::string& secret, const std::string& challenge) {
  return hmac_sha256(secret, "ptdp-rendezvous-v1 " + challenge);
}

std::string as_string(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

}  // namespace

bool accept(int fd, const std::optional<std::string>& secret, net::Clock::time_point deadline,
            std::string* refusal_out) {
  const std::string challenge = random_challenge();
  store_protocol::Writer hello;
  hello.u8(kVersion).u8(secret ? 1 : 0).bytes(challenge.data(), challenge.size());
  if (store_protocol::send_frame(fd, hello.data(), deadline) != net::IoResult::Done) return false;
  std::vector<uint8_t> answer;
  try {
    if (store_protocol::recv_frame(fd, answer, deadline, kMaxHandshakeBytes) != net::IoResult::Done) return false;
  } catch (const Error&) {
    return false;  // a length beyond any handshake: not a ptdp rank
  }
  std::string refusal;
  try {
    store_protocol::Reader r(answer);
    const bool has_proof = r.u8() != 0;
    const std::vector<uint8_t> proof = r.rest();
    if (secret) {
      Sha256Digest given{};
      if (!has_proof || proof.size() != given.size()) {
        refusal = "this store requires the job's secret, and the connection offered none";
      } else {
        std::memcpy(given.data(), proof.data(), given.size());
        if (!digests_equal(given, proof_of(*secret, challenge))) refusal = "wrong secret";
      }
    }
  } catch (const Error&) {
    refusal = "malformed handshake";
  }
  store_protocol::Writer verdict;
  verdict.u8(static_cast<uint8_t>(refusal.empty() ? store_protocol::Status::Ok : store_protocol::Status::Failed))
      .bytes(refusal.data(), refusal.size());
  const bool sent = store_protocol::send_frame(fd, verdict.data(), deadline) == net::IoResult::Done;
  if (refusal_out) *refusal_out = refusal;
  return sent && refusal.empty();
}

void offer(int fd, const std::optional<std::string>& secret, net::Clock::time_point deadline, const std::string& where) {
  const std::string who = "rendezvous: the store at " + where;
  std::vector<uint8_t> hello;
  if (store_protocol::recv_frame(fd, hello, deadline, kMaxHandshakeBytes) != net::IoResult::Done)
    throw Error(who + " closed the connection before its handshake (too many connections, or not a ptdp store)");
  store_protocol::Reader r(hello);
  const uint8_t version = r.u8();
  if (version != kVersion)
    throw Error(who + " speaks handshake version " + std::to_string(version) + ", this rank " +
                std::to_string(kVersion) + " (different ptdp versions in one job?)");
  const bool required = r.u8() != 0;
  const std::vector<uint8_t> challenge = r.rest();
  if (required && !secret)
    throw Error(who + " requires the job's secret and this rank has none: give every rank the same " +
                "PTDP_RENDEZVOUS_SECRET_FILE (or PTDP_RENDEZVOUS_SECRET)");
  store_protocol::Writer answer;
  answer.u8(secret ? 1 : 0);
  if (secret) {
    const Sha256Digest proof = proof_of(*secret, as_string(challenge));
    answer.bytes(proof.data(), proof.size());
  }
  if (store_protocol::send_frame(fd, answer.data(), deadline) != net::IoResult::Done)
    throw Error(who + " closed the connection during its handshake");
  std::vector<uint8_t> verdict;
  if (store_protocol::recv_frame(fd, verdict, deadline, kMaxHandshakeBytes) != net::IoResult::Done)
    throw Error(who + " did not answer the handshake");
  store_protocol::Reader v(verdict);
  if (static_cast<store_protocol::Status>(v.u8()) != store_protocol::Status::Ok)
    throw Error(who + " refused this rank: " + as_string(v.rest()) +
                " (every rank needs the same PTDP_RENDEZVOUS_SECRET_FILE or PTDP_RENDEZVOUS_SECRET)");
}

}  // namespace ptdp::store_handshake
