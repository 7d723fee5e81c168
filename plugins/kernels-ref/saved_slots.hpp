#pragma once
// What a layer's forward kept for its backward, one entry per microbatch slot in flight.
#include <map>
#include <string>
#include <utility>

#include <ptdp/error.hpp>

namespace ptdp::kref {

template <class Saved>
class SavedSlots {
 public:
  explicit SavedSlots(std::string layer) : layer_(std::move(layer)) {}

  // Called before a forward(save=true) does any work, so a misuse fails on every rank alike
  // before a collective is entered.
  void require_free(int slot) const {
    if (saved_.count(slot) != 0)
      throw Error("kernels-ref: " + layer_ + ": microbatch slot " + std::to_string(slot) +
                  " already holds saved activations (backward or release it before a new forward)");
  }
  void require_saved(int slot) const {
    if (saved_.count(slot) == 0)
      throw Error("kernels-ref: " + layer_ + ": backward of microbatch slot " + std::to_string(slot) +
                  " without a forward(save=true) of it");
  }

  void put(int slot, Saved saved) {
    require_free(slot);
    saved_.emplace(slot, std::move(saved));
  }
  Saved take(int slot) {
    require_saved(slot);
    auto node = saved_.extract(slot);
    return std::move(node.mapped());
  }
  void release(int slot) { saved_.erase(slot); }

 private:
  std::string layer_;
  std::map<int, Saved> saved_;
};

}  // namespace ptdp::kref
