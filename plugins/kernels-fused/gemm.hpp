#pragma once
// GEMMs: bf16 operands, fp32 accumulation. Linear layers go through cuBLASLt (its bias epilogue
// adds a column-parallel layer's bias for free; weight gradients accumulate straight into the fp32
// gradient with beta = 1); attention's per-head products go through cuBLAS strided-batched GEMMs.
// A cuBLASLt plan (descriptors and the heuristic's algorithm) is made once per shape and reused.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "arena.hpp"
#include "kernel_context.hpp"

namespace ptdp::fused {

class Gemm {
 public:
  Gemm(cudaStream_t stream, std::shared_ptr<DeviceArena> arena, size_t workspace_bytes);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Row-major helpers for y = x W^T (+ bias) with W [out, in] as torch.nn.Linear.
  // y[rows, out] = x[rows, in] W^T + bias (bias: bf16 [out] or null).
  void linear_forward(const bf16* x, const bf16* weight, const bf16* bias, bf16* y, int64_t rows, int64_t in,
                      int64_t out);
  // dx[rows, in] = dy[rows, out] W.
  void linear_backward_input(const bf16* dy, const bf16* weight, bf16* dx, int64_t rows, int64_t in, int64_t out);
  // dW[out, in] += dy^T x, into the fp32 gradient.
  void linear_backward_weight(const bf16* dy, const bf16* x, float* dweight, int64_t rows, int64_t in, int64_t out);

  // Column-major, as cuBLAS: C[m, n] = op(A) op(B) for `batch` products, operand i at base + i*stride.
  void batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const bf16* a, int64_t lda,
               int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, bf16* c, int64_t ldc,
               int64_t stride_c, int64_t batch);

  // Column-major: D[m, n] = op(A)[m, k] op(B)[k, n] + beta * D, plus bias (length m) when given.
  // D is bf16 or fp32.
  void matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const bf16* a, int64_t lda, const bf16* b,
              int64_t ldb, void* d, cudaDataType_t d_type, int64_t ldd, float beta, const bf16* bias);

 private:
  struct PlanKey {
    bool trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldd;
    cudaDataType_t d_type;
    bool accumulate, bias;
    uint32_t align_a, align_b, align_d, align_bias;
    bool operator==(const PlanKey&) const = default;
  };
  struct PlanKeyHash {
    size_t operator()(const PlanKey& k) const;
  };
  struct Plan;
  const Plan& plan_for(const PlanKey& key);

  cudaStream_t stream_;
  std::shared_ptr<DeviceArena> arena_;
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::shared_ptr<void> workspace_;
  size_t workspace_bytes_;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans_;
};

}  // namespace ptdp::fused
