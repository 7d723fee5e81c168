#pragma once
// What a layer's forward kept for its backward, one entry per microbatch slot in flight.
#include <map>
#include <string>
#include <utility>

#include "ptdp/error.hpp"

namespace ptdp::fused {

template <class Saved>
class SavedSlots {
 public:
  explicit SavedSlots(std::string layer) : layer_(std::move(layer)) {}

  // Before a forward that saves: two microbatches in flight never share a slot.
  void require_free(int slot) const {
    if (saved_.count(slot))
      throw Error("kernels-fused: " + layer_ + ": microbatch slot " + std::to_string(slot) +
                  " already holds a saved forward (run its backward or release it first)");
  }
  void put(int slot, Saved saved) {
    require_free(slot);
    saved_.emplace(slot, std::move(saved));
  }
  Saved take(int slot) {
    auto it = saved_.find(slot);
    if (it == saved_.end())
      throw Error("kernels-fused: " + layer_ + ": backward of microbatch slot " + std::to_string(slot) +
                  " without a forward that saved it (forward(save = true) must come first)");
    Saved saved = std::move(it->second);
    saved_.erase(it);
    return saved;
  }
  void release(int slot) { saved_.erase(slot); }

 private:
  std::string layer_;
  std::map<int, Saved> saved_;
};

}  // namespace ptdp::fused
