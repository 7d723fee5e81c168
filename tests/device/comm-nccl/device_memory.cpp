#include "device_memory.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

void check_test_cuda(cudaError_t result, const char* call, const char* file, int line) {
  if (result != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(result) + " [" +
                             file + ":" + std::to_string(line) + "]");
}

DeviceBuffer::DeviceBuffer(ptdp::DType dtype, int64_t count, int device) {
  tensor_.dtype = dtype;
  tensor_.shape = {count};
  tensor_.device = {ptdp::MemoryKind::Cuda, device};
  TEST_CUDA(cudaMalloc(&tensor_.data, std::max<size_t>(tensor_.bytes(), 1)));
  TEST_CUDA(cudaMemset(tensor_.data, 0, tensor_.bytes()));
}

DeviceBuffer::~DeviceBuffer() { cudaFree(tensor_.data); }

namespace {

template <class T>
void store(std::vector<uint8_t>& bytes, size_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}

template <class T>
T load(const std::vector<uint8_t>& bytes, size_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

void DeviceBuffer::upload(const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != tensor_.numel())
    throw std::runtime_error("upload: " + std::to_string(values.size()) + " values for a buffer of " +
                             std::to_string(tensor_.numel()));
  std::vector<uint8_t> bytes(tensor_.bytes());
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (tensor_.dtype) {
      case ptdp::DType::F32: store(bytes, i, static_cast<float>(v)); break;
      case ptdp::DType::BF16: store(bytes, i, __float2bfloat16(static_cast<float>(v))); break;
      case ptdp::DType::F16: store(bytes, i, __float2half(static_cast<float>(v))); break;
      case ptdp::DType::I32: store(bytes, i, static_cast<int32_t>(v)); break;
      case ptdp::DType::I64: store(bytes, i, static_cast<int64_t>(v)); break;
      case ptdp::DType::U16: store(bytes, i, static_cast<uint16_t>(v)); break;
      case ptdp::DType::U8: store(bytes, i, static_cast<uint8_t>(v)); break;
    }
  }
  TEST_CUDA(cudaMemcpy(tensor_.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}

std::vector<double> DeviceBuffer::download() const {
  std::vector<uint8_t> bytes(tensor_.bytes());
  TEST_CUDA(cudaMemcpy(bytes.data(), tensor_.data, bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<double> values(static_cast<size_t>(tensor_.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (tensor_.dtype) {
      case ptdp::DType::F32: values[i] = load<float>(bytes, i); break;
      case ptdp::DType::BF16: values[i] = __bfloat162float(load<__nv_bfloat16>(bytes, i)); break;
      case ptdp::DType::F16: values[i] = __half2float(load<__half>(bytes, i)); break;
      case ptdp::DType::I32: values[i] = load<int32_t>(bytes, i); break;
      case ptdp::DType::I64: values[i] = static_cast<double>(load<int64_t>(bytes, i)); break;
      case ptdp::DType::U16: values[i] = load<uint16_t>(bytes, i); break;
      case ptdp::DType::U8: values[i] = load<uint8_t>(bytes, i); break;
    }
  }
  return values;
}

HostFlag::HostFlag() {
  void* host = nullptr;
  TEST_CUDA(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped));
  host_ = static_cast<volatile int*>(host);
  *host_ = 0;
  void* device = nullptr;
  TEST_CUDA(cudaHostGetDevicePointer(&device, host, 0));
  device_ = static_cast<volatile int*>(device);
}

HostFlag::~HostFlag() { cudaFreeHost(const_cast<int*>(host_)); }
