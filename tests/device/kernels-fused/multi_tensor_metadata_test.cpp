// The multi-tensor metadata cache finds a list again by comparing its packed bytes, so the same
// descriptors must pack to the same bytes wherever they were built: no byte of a descriptor may
// be left indeterminate (padding held stack garbage once, and Adam's metadata was uploaded anew
// every step). Runs without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <new>

#include "adam.hpp"
#include "grad_norm.hpp"
#include "multi_tensor.hpp"
#include "working_copy.hpp"

namespace ptdp::fused {
namespace {

// Builds `make()` in storage first filled with `fill`, so that any byte the construction does not
// write keeps it, and lists the bytes as they are.
template <class T, class Make>
std::vector<T> built_over(unsigned char fill, Make make) {
  alignas(T) unsigned char storage[sizeof(T)];
  std::memset(storage, fill, sizeof(storage));
  new (storage) T(make());
  std::vector<T> list(1);
  std::memcpy(static_cast<void*>(list.data()), storage, sizeof(T));
  return list;
}

template <class T, class Make>
void expect_same_bytes(Make make) {
  const MultiTensorMetadata a = pack_multi_tensor(built_over<T>(0x00, make));
  const MultiTensorMetadata b = pack_multi_tensor(built_over<T>(0xff, make));
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(MultiTensorMetadata, DescriptorsPackToTheSameBytesWhereverTheyWereBuilt) {
  auto* f = reinterpret_cast<float*>(std::uintptr_t{0x1000});
  auto* w = reinterpret_cast<act_t*>(std::uintptr_t{0x2000});
  auto* q = reinterpret_cast<__nv_fp8_storage_t*>(std::uintptr_t{0x3000});
  expect_same_bytes<AdamTensor>([&] { return AdamTensor{f, f, f, f, w, q, f, f, f, 70000, 0.1f}; });
  expect_same_bytes<SquareSumTensor>([&] { return SquareSumTensor{f, 70000}; });
  expect_same_bytes<CastTensor>([&] { return CastTensor{f, w, 70000, nullptr}; });
}

}  // namespace
}  // namespace ptdp::fused
