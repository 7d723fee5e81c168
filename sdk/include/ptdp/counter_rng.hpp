#pragma once
// Counter-based random numbers (Philox4x32-10): a pure function of (key, counter), so any
// backend on any layout draws the same value for the same logical element. Used for parameter
// initialization (key: tensor name, counter: element index) and dropout masks.
#include <cstdint>
#include <cmath>
#include <string_view>

#if defined(__CUDACC__)
#define PTDP_HD __host__ __device__ __forceinline__
#else
#define PTDP_HD inline
#endif

namespace ptdp::rng {

struct Philox4 {
  uint32_t v[4];
};

PTDP_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

PTDP_HD Philox4 philox(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, hi0, lo0);
    mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in (0, 1], 24 bits of mantissa.
PTDP_HD float to_unit(uint32_t x) { return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f); }

PTDP_HD float uniform(uint64_t key, uint64_t stream, uint64_t index) {
  return to_unit(philox(key, stream, index).v[0]);
}

// Standard normal by Box-Muller on the first two words of the block.
PTDP_HD float normal(uint64_t key, uint64_t stream, uint64_t index) {
  Philox4 r = philox(key, stream, index);
  float u1 = to_unit(r.v[0]), u2 = to_unit(r.v[1]);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
}

// Key of a named tensor: FNV-1a of the name mixed with the run seed.
inline uint64_t name_key(uint64_t seed, std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h ^ (seed * 0x9E3779B97F4A7C15ull);
}

// Dropout keep decision for one element of one dropout site. `site` distinguishes the
// embedding (0) and the two residual dropouts of layer i (1 + 2i, 2 + 2i); `element` is the
// layout-independent index ((sample * seq_len + position) * hidden + feature).
PTDP_HD bool dropout_keep(uint64_t seed, int64_t step, int site, uint64_t element, float p) {
  uint64_t stream = (static_cast<uint64_t>(step) << 20) ^ static_cast<uint64_t>(site);
  return uniform(seed ^ 0xD50F5EEDull, stream, element) >= p;
}

}  // namespace ptdp::rng
