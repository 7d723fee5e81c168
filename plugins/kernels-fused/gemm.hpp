#pragma once
// GEMMs: act_t operands, fp32 accumulation. Linear layers go through cuBLASLt, whose epilogues do
// the elementwise work beside the GEMM for free: a column-parallel layer's bias, bias + GeLU with
// the GeLU input kept for backward, dGeLU from that input, and bias gradients as sums over the
// GEMM's k dimension. Weight gradients accumulate straight into the fp32 gradient with
// beta = 1. Attention's per-head products go through cuBLAS strided-batched GEMMs. A cuBLASLt plan
// (descriptors and an algorithm) is made once per shape and epilogue and reused. The algorithm is
// the heuristic's first, or, autotuned, the fastest of the heuristic's first few, timed on the
// GEMM's own operands at its first call: the heuristic ranks by a model of the device, and on
// the H200 its first pick is not always the fastest for these shapes. Which GEMMs are offered the
// workspace is a choice too (GemmWorkspaceScope): with one, cuBLASLt picks kernels that it zeroes
// a few bytes of the workspace for, with a memset before every launch; without one, kernels that
// need no such memset (on the H200 their names carry `ssched`).
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "arena.hpp"
#include "kernel_context.hpp"
#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// What a GEMM's epilogue does beside D = op(A) op(B) + beta * D (column-major, m x n).
struct GemmEpilogue {
  enum class Kind {
    None,
    Bias,         // D += bias[m] (act_t), broadcast over the columns
    GeluAuxBias,  // aux = D + bias; D = gelu(aux)
    DGelu,        // D = D * gelu'(aux)
    BGradB,       // bias_grad[n] += sum over k of op(B)
  };
  Kind kind = Kind::None;
  const act_t* bias = nullptr;
  act_t* aux = nullptr;      // act_t m x n, leading dimension m
  float* bias_grad = nullptr;  // fp32 accumulator
};

// Which cuBLASLt GEMMs are offered the workspace.
enum class GemmWorkspaceScope {
  All,
  // Only those with the DGELU or BGRADB epilogue. On the H200, cuBLASLt runs DGELU without a
  // workspace as a GEMM plus a separate epilogue kernel that takes longer than the GEMM; the other
  // GEMMs of the 1.3B model ran as fast without one, and the memset before each, with the launch
  // gaps beside it, was gone (BENCHMARKS.md, 2026-12-03, late night). BGRADB (off by default) keeps
  // the workspace too, as it has not been measured without one.
  GradientEpilogues,
};

// An FP8 operand: [rows, inner] row-major with the inner (summed) dimension contiguous, in E4M3
// or E5M2, and the device float that the product is multiplied by for it (the inverse of the
// scale it was cast with).
struct Fp8Matrix {
  const void* data = nullptr;
  bool e5m2 = false;
  const float* scale_inv = nullptr;
};

class Gemm {
 public:
  using Epilogue = GemmEpilogue;

  // With `autotune`, each plan's algorithm is timed among the heuristic's first kAutotuneCandidates
  // at the plan's first GEMM (which then waits for the device). `log` hears which algorithm won
  // and of cuBLAS handles and plans that cannot be destroyed.
  Gemm(cudaStream_t stream, std::shared_ptr<DeviceArena> arena, size_t workspace_bytes, bool autotune = false,
       PluginLog log = {}, GemmWorkspaceScope workspace_scope = GemmWorkspaceScope::GradientEpilogues);
  static constexpr int kAutotuneCandidates = 8;
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Row-major helpers for y = x W^T (+ bias) with W [out, in] as torch.nn.Linear.
  // y[rows, out] = x[rows, in] W^T + bias (bias: act_t [out] or null).
  void linear_forward(const act_t* x, const act_t* weight, const act_t* bias, act_t* y, int64_t rows, int64_t in,
                      int64_t out);
  // dx[rows, in] = alpha * dy[rows, out] W.
  void linear_backward_input(const act_t* dy, const act_t* weight, act_t* dx, int64_t rows, int64_t in, int64_t out,
                             float alpha = 1.0f);
  // dW[out, in] += alpha * dy^T x, into the fp32 gradient (with accumulate false, dW = alpha *
  // dy^T x: beta 0, so what dW held is not read and may be anything); with dbias, also dbias[out]
  // += column sums of dy (the BGRADB epilogue: a sum over the GEMM's k dimension, the rows; alpha
  // must then be 1, as the epilogue sums dy unscaled), or with accumulate false dbias = those sums.
  void linear_backward_weight(const act_t* dy, const act_t* x, float* dweight, int64_t rows, int64_t in, int64_t out,
                              float* dbias = nullptr, float alpha = 1.0f, bool accumulate = true);

  // The MLP's GeLU in the epilogues (tanh form; gelu_epilogue_fits says when the shapes allow it).
  // Forward: y[rows, out] = gelu(x W^T + bias) with bias act_t [out]; pre_gelu [rows, out] receives
  // x W^T + bias, the GELU_AUX_BIAS epilogue's aux output, which backward reads.
  void linear_forward_gelu(const act_t* x, const act_t* weight, const act_t* bias, act_t* y, act_t* pre_gelu,
                           int64_t rows, int64_t in, int64_t out);
  // Backward through the next layer and the GeLU at once (DGELU): dx[rows, in] =
  // (dy W) * gelu'(pre_gelu). The GeLU layer's bias gradient is the column sums of dx, which the
  // weight-gradient GEMM that reads dx sums in its own epilogue (linear_backward_weight's dbias):
  // there they are a sum over its k dimension, where a DGELU_BGRAD epilogue would sum across
  // the GEMM's tiles.
  void linear_backward_input_dgelu(const act_t* dy, const act_t* weight, const act_t* pre_gelu, act_t* dx,
                                   int64_t rows, int64_t in, int64_t out);
  // cuBLASLt's aux matrix needs a leading dimension (the GeLU layer's width) divisible by 8.
  static bool gelu_epilogue_fits(int64_t width) { return width % 8 == 0; }

  // D[m, n] = A[m, k] · B[n, k]ᵀ · a.scale_inv · b.scale_inv (+ beta · D), on FP8 operands that
  // both have k contiguous: the one layout Hopper's FP8 tensor cores take, which is why the
  // gradient GEMMs read transposed copies. D is row-major [m, n], act_t or fp32. The epilogue:
  // None; Bias (act_t [n]); GeluAuxBias (bias act_t [n], aux [m, n] row-major receives the GeLU's
  // input; D act_t). fast_accumulation: cuBLASLt's FAST_ACCUM,
  // which keeps partial sums in the tensor cores' own precision for longer (the forward's
  // choice); without it they are promoted to fp32 more often (the gradients').
  void fp8_nt(const Fp8Matrix& a, const Fp8Matrix& b, int64_t m, int64_t n, int64_t k, void* d,
              cudaDataType_t d_type, float beta, const Epilogue& epilogue, bool fast_accumulation);
  // Whether cuBLASLt offers an algorithm for fp8_nt into act_t with this epilogue, on operands
  // aligned as the arena aligns them (a E5M2 when a_e5m2). Asked before a layer settles on an
  // epilogue, since which epilogues cuBLASLt takes with FP8 inputs depends on its version.
  bool fp8_nt_offers(Epilogue::Kind epilogue, bool a_e5m2, int64_t m, int64_t n, int64_t k, bool fast_accumulation);

  // Column-major, as cuBLAS: C[m, n] = op(A) op(B) for `batch` products, operand i at base + i*stride.
  void batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const act_t* a, int64_t lda,
               int64_t stride_a, const act_t* b, int64_t ldb, int64_t stride_b, act_t* c, int64_t ldc,
               int64_t stride_c, int64_t batch);

  // Column-major: D[m, n] = alpha * op(A)[m, k] op(B)[k, n] + beta * D, then the epilogue. D is
  // act_t or fp32.
  void matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const act_t* a, int64_t lda, const act_t* b,
              int64_t ldb, void* d, cudaDataType_t d_type, int64_t ldd, float beta, const Epilogue& epilogue = {},
              float alpha = 1.0f);

 private:
  struct PlanKey {
    bool trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldd;
    cudaDataType_t d_type;
    bool accumulate;
    Epilogue::Kind epilogue;
    uint32_t align_a, align_b, align_d, align_bias;
    cudaDataType_t a_type = kActCudaType, b_type = kActCudaType;  // FP8 types for fp8_nt
    bool fast_accumulation = false;
    bool operator==(const PlanKey&) const = default;
  };
  struct PlanKeyHash {
    size_t operator()(const PlanKey& k) const;
  };
  struct Plan;
  Plan& plan_for(const PlanKey& key);
  // fp8_nt's plan key: our A and B swapped into cuBLAS's column-major TN form.
  static PlanKey fp8_key(bool a_e5m2, bool b_e5m2, int64_t m, int64_t n, int64_t k, cudaDataType_t d_type, float beta,
                         Epilogue::Kind epilogue, uint32_t align_a, uint32_t align_b, uint32_t align_d,
                         uint32_t align_bias, bool fast_accumulation);
  // Times the plan's candidate algorithms on these operands and keeps the fastest. D (and the
  // aux matrix and bias-gradient scratch) are written by the timing runs; an accumulated D is
  // kept in host memory meanwhile and put back, so the call that follows sees it unchanged.
  void autotune(Plan& plan, const PlanKey& key, const void* a, const void* b, void* d, float beta);
  // The GEMM of `key` with its epilogue, once the plan is made (matmul and fp8_nt).
  void launch(const PlanKey& key, const void* a, const void* b, void* d, float beta, const Epilogue& epilogue,
              float alpha, const float* a_scale = nullptr, const float* b_scale = nullptr);

  // A device float holding 1: the scale pointers an FP8 plan is made with.
  const float* unit_scale();

  cudaStream_t stream_;
  std::shared_ptr<DeviceArena> arena_;
  std::shared_ptr<void> unit_scale_;
  PluginLog log_;
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::shared_ptr<void> workspace_;
  size_t workspace_bytes_;
  bool autotune_;
  GemmWorkspaceScope workspace_scope_;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans_;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
