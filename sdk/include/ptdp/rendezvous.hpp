#pragma once
// The core's key-value store that communicators bootstrap through (NCCL unique ids, UCX worker
// addresses). Every rank of the job sees the same store.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ptdp {

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Blocks until the key exists; throws ptdp::Error naming the key once the timeout passes.
  virtual std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
};

}  // namespace ptdp
