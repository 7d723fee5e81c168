#include "gemm.hpp"

#include <string>

#include "cuda_check.hpp"

namespace ptdp::fused {
namespace {

uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

std::string shape_text(int64_t m, int64_t n, int64_t k) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

}  // namespace

// Teardown calls are not checked: they may run after the CUDA context is gone, and a destructor
// has nobody to report to.
struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

size_t Gemm::PlanKeyHash::operator()(const PlanKey& k) const {
  size_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(k.trans_a); mix(k.trans_b); mix(uint64_t(k.m)); mix(uint64_t(k.n)); mix(uint64_t(k.k));
  mix(uint64_t(k.lda)); mix(uint64_t(k.ldb)); mix(uint64_t(k.ldd)); mix(uint64_t(k.d_type));
  mix(k.accumulate); mix(k.bias); mix(k.align_a); mix(k.align_b); mix(k.align_d); mix(k.align_bias);
  return h;
}

Gemm::Gemm(cudaStream_t stream, std::shared_ptr<DeviceArena> arena, size_t workspace_bytes)
    : stream_(stream), arena_(std::move(arena)), workspace_bytes_(workspace_bytes) {
  PTDP_CUBLAS_CHECK(cublasLtCreate(&lt_));
  PTDP_CUBLAS_CHECK(cublasCreate(&blas_));
  PTDP_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  if (workspace_bytes_ > 0) {
    workspace_ = arena_->allocate(workspace_bytes_);
    PTDP_CUBLAS_CHECK(cublasSetWorkspace(blas_, workspace_.get(), workspace_bytes_));
  }
}

Gemm::~Gemm() {
  plans_.clear();
  if (blas_) cublasDestroy(blas_);
  if (lt_) cublasLtDestroy(lt_);
}

const Gemm::Plan& Gemm::plan_for(const PlanKey& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;

  auto plan = std::make_unique<Plan>();
  PTDP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  PTDP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  PTDP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  const cublasLtEpilogue_t epilogue = key.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  PTDP_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (key.bias) {
    const cudaDataType_t bias_type = CUDA_R_16BF;
    PTDP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                     sizeof(bias_type)));
  }
  // Stored (column-major) shapes: A is m x k, or k x m when transposed; likewise B.
  const uint64_t a_rows = key.trans_a ? key.k : key.m, a_cols = key.trans_a ? key.m : key.k;
  const uint64_t b_rows = key.trans_b ? key.n : key.k, b_cols = key.trans_b ? key.k : key.n;
  PTDP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, a_rows, a_cols, key.lda));
  PTDP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, b_rows, b_cols, key.ldb));
  PTDP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->d, key.d_type, key.m, key.n, key.ldd));

  cublasLtMatmulPreference_t preference = nullptr;
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t workspace = workspace_bytes_;
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace, sizeof(workspace)));
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                         &key.align_a, sizeof(key.align_a)));
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                         &key.align_b, sizeof(key.align_b)));
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                         &key.align_d, sizeof(key.align_d)));
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                         &key.align_d, sizeof(key.align_d)));
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                                                preference, 1, &result, &found_count);
  PTDP_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(preference));
  if (status != CUBLAS_STATUS_SUCCESS || found_count == 0)
    throw Error(std::string("kernels-fused: cuBLASLt has no algorithm for a GEMM of ") +
                shape_text(key.m, key.n, key.k) + (key.bias ? " with bias" : "") + ": " +
                cublasGetStatusString(status));
  plan->algo = result.algo;
  auto [it, inserted] = plans_.emplace(key, std::move(plan));
  return *it->second;
}

void Gemm::matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const bf16* a, int64_t lda,
                  const bf16* b, int64_t ldb, void* d, cudaDataType_t d_type, int64_t ldd, float beta,
                  const bf16* bias) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // An empty product: D keeps beta * D, which for the calls made here is D or 0.
    const size_t element = d_type == CUDA_R_32F ? 4 : 2;
    if (beta == 0.0f) PTDP_CUDA_CHECK(cudaMemset2DAsync(d, ldd * element, 0, m * element, n, stream_));
    return;
  }
  const PlanKey key{trans_a, trans_b, m, n, k, lda, ldb, ldd, d_type, beta != 0.0f, bias != nullptr,
                    alignment_of(a), alignment_of(b), alignment_of(d), bias ? alignment_of(bias) : 256u};
  const Plan& plan = plan_for(key);
  if (bias)
    PTDP_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha = 1.0f;
  PTDP_CUBLAS_CHECK(cublasLtMatmul(lt_, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d, plan.d, d, plan.d,
                                   &plan.algo, workspace_.get(), workspace_bytes_, stream_));
}

void Gemm::linear_forward(const bf16* x, const bf16* weight, const bf16* bias, bf16* y, int64_t rows, int64_t in,
                          int64_t out) {
  // Column-major: y^T[out, rows] = W^T-as-stored(in x out)^T * x^T(in x rows).
  matmul(true, false, out, rows, in, weight, in, x, in, y, CUDA_R_16BF, out, 0.0f, bias);
}

void Gemm::linear_backward_input(const bf16* dy, const bf16* weight, bf16* dx, int64_t rows, int64_t in,
                                 int64_t out) {
  // Column-major: dx^T[in, rows] = W-as-stored(in x out) * dy^T(out x rows).
  matmul(false, false, in, rows, out, weight, in, dy, out, dx, CUDA_R_16BF, in, 0.0f, nullptr);
}

void Gemm::linear_backward_weight(const bf16* dy, const bf16* x, float* dweight, int64_t rows, int64_t in,
                                  int64_t out) {
  // Column-major: dW^T[in, out] += x^T(in x rows) * dy(rows x out).
  matmul(false, true, in, out, rows, x, in, dy, out, dweight, CUDA_R_32F, in, 1.0f, nullptr);
}

void Gemm::batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const bf16* a, int64_t lda,
                   int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, bf16* c, int64_t ldc,
                   int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  PTDP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      blas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, int(m), int(n), int(k), &alpha,
      a, CUDA_R_16BF, int(lda), stride_a, b, CUDA_R_16BF, int(ldb), stride_b, &beta, c, CUDA_R_16BF, int(ldc),
      stride_c, int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ptdp::fused
