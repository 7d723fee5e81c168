// kernels-fused-fp8-cast-bandwidth: how close kernels-fused's FP8 casts come to the device's own
// ceiling for streaming DRAM traffic. It times each cast of one block of the 1.3B model's FP8 step
// (micro-batch 4, sequence 2048: 8192 tokens, hidden 2048, FFN 8192; the delayed recipe's given
// scales, every output stored as it is and transposed) and cudaMemcpy between two device buffers,
// each the mean of 50 launches after 5 warm-ups, in one process, and prints the bytes each cast
// must move (its input read once, its two FP8 outputs written once) per second beside the copy's.
// A benchmark, not a check: scripts/gpu/run.sh fp8-cast-bandwidth runs it; ctest never does.
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "arena.hpp"
#include "fp8_cast.hpp"
#include "mean_launch_time.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace {

using ptdp::fused::act_t;
using ptdp::fused::fp8;

// Normal values of standard deviation sigma, so that GeLU's branches are taken as in training.
template <class T>
std::shared_ptr<void> device_random(size_t n, float sigma, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<T> host(n);
  for (T& v : host) v = T(normal(gen));
  void* p = nullptr;
  PTDP_CALL(cudaMalloc(&p, n * sizeof(T)));
  PTDP_CALL(cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

std::shared_ptr<void> device_filled(size_t bytes, int byte) {
  void* p = nullptr;
  PTDP_CALL(cudaMalloc(&p, bytes));
  PTDP_CALL(cudaMemset(p, byte, bytes));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

// Mean microseconds of one `launch`, over 50 after 5 unmeasured.
double mean_us(cudaStream_t stream, const std::function<void()>& launch) {
  return 1e3 * ptdp::fused::bench::mean_launch_ms(stream, 5, 50, launch);
}

struct Cast {
  std::string name;
  int64_t rows, cols;
  double bytes;                  // what it must move at least
  std::function<void()> launch;  // one cast
};

}  // namespace

int main() {
  try {
    using namespace ptdp::fused;
    constexpr int64_t tokens = 8192, hidden = 2048, ffn = 8192;
    cudaStream_t stream;
    PTDP_CALL(cudaStreamCreate(&stream));
    auto arena = DeviceArena::create(0);
    KernelContext ctx;
    ctx.stream = stream;
    ctx.arena = arena.get();
    auto activations = device_random<act_t>(tokens * ffn, 1.0f, 1);
    auto gradients = device_random<act_t>(tokens * ffn, 1e-4f, 2);
    auto weights = device_random<float>(hidden * ffn, 0.02f, 3);
    auto bias = device_random<float>(ffn, 0.1f, 4);
    auto out = device_filled(tokens * ffn, 0), out_t = device_filled(tokens * ffn, 0);
    auto scalars = device_filled(3 * sizeof(float), 0);
    float* scale = static_cast<float*>(scalars.get());
    float* scale_inv = scale + 1;
    float* record = scale + 2;
    const float one = 1.0f;
    PTDP_CALL(cudaMemcpy(scale, &one, sizeof one, cudaMemcpyHostToDevice));
    auto dbias = device_filled(ffn * sizeof(float), 0);
    const Fp8ScaleSource given{nullptr, scale, 0};
    const auto* x = static_cast<const act_t*>(activations.get());
    const auto* dy = static_cast<const act_t*>(gradients.get());
    const auto* w = static_cast<const float*>(weights.get());
    auto* o = static_cast<fp8*>(out.get());
    auto* ot = static_cast<fp8*>(out_t.get());

    std::vector<Cast> casts;
    auto stored = [&](std::string name, const act_t* in, int64_t rows, int64_t cols, Fp8Kind kind) {
      casts.push_back({std::move(name), rows, cols, double(rows * cols) * (sizeof(act_t) + 2),
                       [=, &ctx] { fp8_cast(in, rows, cols, kind, given, o, ot, scale_inv, record, ctx); }});
    };
    auto weight = [&](std::string name, int64_t rows, int64_t cols) {
      casts.push_back({std::move(name), rows, cols, double(rows * cols) * (sizeof(float) + 2),
                       [=, &ctx] { fp8_cast(w, rows, cols, Fp8Kind::E4M3, given, o, ot, scale_inv, record, ctx); }});
    };
    stored("activation (LayerNorm out) E4M3", x, tokens, hidden, Fp8Kind::E4M3);
    stored("output gradient E5M2", dy, tokens, hidden, Fp8Kind::E5M2);
    stored("QKV output gradient E5M2", dy, tokens, 3 * hidden, Fp8Kind::E5M2);
    weight("QKV weight (fp32) E4M3", 3 * hidden, hidden);
    weight("projection weight (fp32) E4M3", hidden, hidden);
    weight("FC1 weight (fp32) E4M3", ffn, hidden);
    weight("FC2 weight (fp32) E4M3", hidden, ffn);
    const Fp8GeluSource forward{x, static_cast<const float*>(bias.get()), nullptr};
    casts.push_back({"GeLU(FC1 out + bias) E4M3", tokens, ffn, double(tokens * ffn) * (sizeof(act_t) + 2), [&] {
                       fp8_cast_gelu(forward, tokens, ffn, Fp8Kind::E4M3, given, o, ot, scale_inv, record, nullptr, ctx);
                     }});
    const Fp8GeluSource backward{x, static_cast<const float*>(bias.get()), dy};
    casts.push_back({"dy * GeLU'(FC1 out + bias) E5M2, bias gradient", tokens, ffn,
                     double(tokens * ffn) * (2 * sizeof(act_t) + 2), [&] {
                       fp8_cast_gelu(backward, tokens, ffn, Fp8Kind::E5M2, given, o, ot, scale_inv, record,
                                     static_cast<float*>(dbias.get()), ctx);
                     }});

    auto copy = device_filled(tokens * ffn * sizeof(act_t), 0);
    const double copy_us = mean_us(stream, [&] {
      PTDP_CALL(cudaMemcpyAsync(copy.get(), activations.get(), tokens * ffn * sizeof(act_t), cudaMemcpyDeviceToDevice,
                                stream));
    });
    const double copy_tbs = 2.0 * tokens * ffn * sizeof(act_t) / copy_us / 1e6;
    std::printf("%-50s %8s %8s %8s\n", "cast (stored and transposed)", "us", "TB/s", "of copy");
    double total_us = 0;
    for (const Cast& c : casts) {
      const double us = mean_us(stream, c.launch);
      total_us += us;
      const double tbs = c.bytes / us / 1e6;
      std::printf("%-50s %8.1f %8.3f %7.1f%%\n", (c.name + " [" + std::to_string(c.rows) + " x " +
                                                   std::to_string(c.cols) + "]").c_str(),
                  us, tbs, 100.0 * tbs / copy_tbs);
    }
    std::printf("all of one block's casts above, once each: %.1f us\n", total_us);
    std::printf("cudaMemcpy device to device, %lld MB: %.1f us, %.3f TB/s (read + write)\n",
                static_cast<long long>(tokens * ffn * sizeof(act_t) / 1000000), copy_us, copy_tbs);
    PTDP_CALL(cudaStreamDestroy(stream));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels-fused-fp8-cast-bandwidth: %s\n", e.what());
    return 1;
  }
}
