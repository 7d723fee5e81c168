#pragma once
// What every device check shares: reporting through GoogleTest, the relative error against an
// fp64 reference, bf16 rounding on the host, fresh random inputs, and device buffers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace ptdp::fused::test {

// Each comparison of a check: a failure is a GoogleTest failure naming the comparison; a pass
// prints its figures (the relative error against its tolerance), which the device logs keep.
class Checks {
 public:
  void record(const std::string& name, bool ok, const std::string& detail) {
    if (!ok) {
      ADD_FAILURE() << name << ": " << detail;
      return;
    }
    std::printf("  ok  %s: %s\n", name.c_str(), detail.c_str());
    std::fflush(stdout);
  }
  // ||got - ref|| / ||ref|| <= tol, and no NaN or infinity in got.
  double close(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
    return close_at_scale(name, got, ref, ref, tol);
  }
  // ||got - ref|| / ||scale|| <= tol: for a result that is a sum of terms which may cancel, whose
  // rounding error is relative to the terms' magnitudes (scale), not to the small sum.
  double close_at_scale(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref,
                        const std::vector<double>& scale, double tol);
};

inline double Checks::close_at_scale(const std::string& name, const std::vector<double>& got,
                                     const std::vector<double>& ref, const std::vector<double>& scale, double tol) {
  if (got.size() != ref.size() || scale.size() != ref.size()) {
    record(name, false, "size " + std::to_string(got.size()) + " != reference size " + std::to_string(ref.size()));
    return INFINITY;
  }
  double diff = 0, norm = 0;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) ++bad;
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += scale[i] * scale[i];
  }
  const double err = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  char text[160];
  if (bad) {
    std::snprintf(text, sizeof text, "%zu of %zu values are NaN or infinite", bad, got.size());
    record(name, false, text);
    return INFINITY;
  }
  std::snprintf(text, sizeof text, "rel err %.3e (tol %.0e, %zu values)", err, tol, got.size());
  record(name, err <= tol, text);
  return err;
}

// bf16 as its 16 bits, rounded to nearest even like the device.
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float round_bf16(float f) { return from_bf16(to_bf16(f)); }

// A fresh generator per run; the seed is printed so a failure can be replayed.
inline std::mt19937_64& rng() {
  static std::mt19937_64 engine = [] {
    const uint64_t seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("random seed %llu\n", static_cast<unsigned long long>(seed));
    return std::mt19937_64(seed);
  }();
  return engine;
}

// Uniform in [lo, hi), already rounded to bf16 so host and device see the same input.
inline std::vector<float> random_bf16_values(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = round_bf16(dist(rng()));
  return v;
}
inline std::vector<float> random_values(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng());
  return v;
}

inline void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// A device array filled from the host and read back; bf16 arrays are held as uint16_t.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { cuda_ok(cudaMalloc(&data_, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& host) {
    cuda_ok(cudaMemcpy(data_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    cuda_ok(cudaDeviceSynchronize(), "kernel");
    cuda_ok(cudaMemcpy(host.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return host;
  }
  // Every byte 0xff: NaN in bf16 and fp32, so an element the kernel never wrote shows up.
  void poison() { cuda_ok(cudaMemset(data_, 0xff, n_ * sizeof(T)), "poison"); }
  T* get() const { return data_; }
  size_t size() const { return n_; }

 private:
  T* data_ = nullptr;
  size_t n_;
};

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_bf16(v[i]);
  return out;
}
inline std::vector<double> widen(const std::vector<uint16_t>& bf16) {
  std::vector<double> out(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) out[i] = from_bf16(bf16[i]);
  return out;
}
inline std::vector<double> widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

inline std::string shape_name(std::initializer_list<long long> dims) {
  std::string s;
  for (long long d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

}  // namespace ptdp::fused::test
