#pragma once
// What a layer's forward kept for its backward, one entry per microbatch slot in flight: the
// rules every LayerKernels plugin must keep alike (layer_kernels.hpp, MicroBatch::slot), so they
// are written once. A forward that saves into a full slot, and a backward of an empty one, are
// refused before any work, so a misuse fails on every rank alike before a collective is entered.
#include <map>
#include <string>
#include <utility>

#include "ptdp/error.hpp"

namespace ptdp {

template <class Saved>
class SavedSlots {
 public:
  // owner names the layer in errors: "kernels-ref: block 3".
  explicit SavedSlots(std::string owner) : owner_(std::move(owner)) {}

  // Before a forward that saves: two microbatches in flight never share a slot.
  void require_free(int slot) const {
    if (saved_.count(slot) != 0)
      throw Error(owner_ + ": microbatch slot " + std::to_string(slot) +
                  " already holds a saved forward (run its backward or release it first)");
  }
  void put(int slot, Saved saved) {
    require_free(slot);
    saved_.emplace(slot, std::move(saved));
  }
  Saved take(int slot) {
    auto it = saved_.find(slot);
    if (it == saved_.end())
      throw Error(owner_ + ": backward of microbatch slot " + std::to_string(slot) +
                  " without a forward that saved it (forward(save = true) must come first)");
    Saved saved = std::move(it->second);
    saved_.erase(it);
    return saved;
  }
  void release(int slot) { saved_.erase(slot); }

 private:
  std::string owner_;
  std::map<int, Saved> saved_;
};

}  // namespace ptdp
