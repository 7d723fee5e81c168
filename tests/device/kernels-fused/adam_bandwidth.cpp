// kernels-fused-adam-bandwidth: how close kernels-fused's Adam comes to the device's own ceiling
// for streaming DRAM traffic. It times the plugin's Adam kernel over one tensor of half the 1.3B
// model's parameters (30 bytes an element: fp32 master, gradient and both moments read, master
// and moments written, the bf16 working copy written) and cudaMemcpy between two device buffers
// of the same elements (4 bytes read, 4 written), each the mean of 20 launches after 3 warm-ups,
// in one process, and prints bytes moved per second for both and their ratio. A benchmark, not a
// check: scripts/gpu/run.sh adam-bandwidth runs it; ctest never does.
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <memory>

#include "adam.hpp"
#include "mean_launch_time.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace {

using ptdp::fused::act_t;

std::shared_ptr<void> device_zeros(size_t bytes) {
  void* p = nullptr;
  PTDP_CALL(cudaMalloc(&p, bytes));
  PTDP_CALL(cudaMemset(p, 0, bytes));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

}  // namespace

int main() {
  try {
    constexpr int64_t n = 658'500'000;  // half of the 1.3B model's 1.317 billion parameters
    cudaStream_t stream;
    PTDP_CALL(cudaStreamCreate(&stream));
    auto param = device_zeros(n * sizeof(float)), grad = device_zeros(n * sizeof(float));
    auto exp_avg = device_zeros(n * sizeof(float)), exp_avg_sq = device_zeros(n * sizeof(float));
    auto working = device_zeros(n * sizeof(act_t));
    const std::vector<ptdp::fused::AdamTensor> list{
        {static_cast<float*>(param.get()), static_cast<const float*>(grad.get()), static_cast<float*>(exp_avg.get()),
         static_cast<float*>(exp_avg_sq.get()), static_cast<act_t*>(working.get()), nullptr, nullptr, nullptr, nullptr, n, 0.1f}};
    const ptdp::fused::MultiTensorMetadata meta = ptdp::fused::pack_multi_tensor(list);
    auto device_meta = device_zeros(meta.bytes.size());
    PTDP_CALL(cudaMemcpy(device_meta.get(), meta.bytes.data(), meta.bytes.size(), cudaMemcpyHostToDevice));
    ptdp::fused::KernelContext ctx;
    ctx.stream = stream;
    const ptdp::fused::AdamHyper hyper{1e-4f, 0.9f, 0.95f, 1e-8f, 1.0f, 0.1f, 0.05f};
    const float adam_ms = ptdp::fused::bench::mean_launch_ms(stream, 3, 20, [&] {
      ptdp::fused::adam_step(device_meta.get(), meta.chunks_offset, meta.chunk_count, 1, 0, hyper, ctx);
    });
    auto copy = device_zeros(n * sizeof(float));
    const float copy_ms = ptdp::fused::bench::mean_launch_ms(stream, 3, 20, [&] {
      PTDP_CALL(cudaMemcpyAsync(copy.get(), param.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    });
    PTDP_CALL(cudaGetLastError());
    const double adam_tbs = 30.0 * n / (adam_ms * 1e-3) / 1e12, copy_tbs = 8.0 * n / (copy_ms * 1e-3) / 1e12;
    std::printf("adam (kernels-fused), %lld elements: %.3f ms, %.3f TB/s\n", static_cast<long long>(n), adam_ms, adam_tbs);
    std::printf("cudaMemcpy device to device: %.3f ms, %.3f TB/s\n", copy_ms, copy_tbs);
    std::printf("adam / copy: %.1f%%\n", 100.0 * adam_tbs / copy_tbs);
    PTDP_CALL(cudaStreamDestroy(stream));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels-fused-adam-bandwidth: %s\n", e.what());
    return 1;
  }
}
