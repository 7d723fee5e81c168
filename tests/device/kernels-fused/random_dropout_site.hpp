#pragma once
// A dropout site of random seed, step, site and first sample, for the device checks of the
// kernels that draw dropout masks.
#include <random>

#include "check.hpp"
#include "dropout.hpp"

namespace ptdp::fused::test {

inline DropoutSite random_site(int micro_batch, int seq_len, int hidden, float p) {
  std::uniform_int_distribution<int64_t> small(0, 1000);
  DropoutSite site;
  site.seed = rng()();
  site.step = small(rng());
  site.site = int(small(rng()) % 50);
  site.p = p;
  site.first_sample = small(rng());
  site.micro_batch = micro_batch;
  site.seq_len = seq_len;
  site.hidden = hidden;
  return site;
}

}  // namespace ptdp::fused::test
