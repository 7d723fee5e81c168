#include "gemm.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "column_reduce.hpp"
#include "ptdp/checked_call_cublas.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
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

using Kind = Gemm::Epilogue::Kind;

cublasLtEpilogue_t lt_epilogue(Kind kind) {
  switch (kind) {
    case Kind::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case Kind::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case Kind::GeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Kind::DGelu: return CUBLASLT_EPILOGUE_DGELU;
    case Kind::BGradB: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// For refusals: what the epilogue is, and the plugin option that turns it off.
std::string epilogue_text(Kind kind) {
  switch (kind) {
    case Kind::None: return "";
    case Kind::Bias: return " with bias";
    case Kind::GeluAuxBias: return " with bias + GeLU (GELU_AUX_BIAS epilogue; plugin option gelu_epilogue = false avoids it)";
    case Kind::DGelu: return " with dGeLU (DGELU epilogue; plugin option gelu_epilogue = false avoids it)";
    case Kind::BGradB: return " with its bias gradient (BGRADB epilogue; plugin option bias_grad_epilogue = false avoids it)";
  }
  return "";
}

// The types the bias (or bias-gradient) vector may have, best first. A bias is read in bf16 (the
// working copies). A bias gradient is best kept in fp32; where cuBLASLt offers no algorithm for
// that, it is taken in bf16, which rounds each microbatch's sum once before it is accumulated.
std::vector<cudaDataType_t> bias_types(Kind kind) {
  switch (kind) {
    case Kind::None:
    case Kind::DGelu: return {};
    case Kind::Bias:
    case Kind::GeluAuxBias: return {kActCudaType};
    case Kind::BGradB: return {CUDA_R_32F, kActCudaType};
  }
  return {};
}

}  // namespace

struct Gemm::Plan {
  explicit Plan(PluginLog teardown_log) : log(std::move(teardown_log)) {}
  ~Plan() {
    TeardownFailures failures;
    if (a) PTDP_TEARDOWN_CALL(failures, cublasLtMatrixLayoutDestroy(a));
    if (b) PTDP_TEARDOWN_CALL(failures, cublasLtMatrixLayoutDestroy(b));
    if (d) PTDP_TEARDOWN_CALL(failures, cublasLtMatrixLayoutDestroy(d));
    if (desc) PTDP_TEARDOWN_CALL(failures, cublasLtMatmulDescDestroy(desc));
    log.write_failures("kernels-fused: destroying a cuBLASLt plan", failures);
  }
  PluginLog log;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's, best first, until autotuned
  cudaDataType_t bias_type = kActCudaType;
  size_t workspace_bytes = 0;  // what this plan's algorithm was chosen for, and is given
};

size_t Gemm::PlanKeyHash::operator()(const PlanKey& k) const {
  size_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(k.trans_a); mix(k.trans_b); mix(uint64_t(k.m)); mix(uint64_t(k.n)); mix(uint64_t(k.k));
  mix(uint64_t(k.lda)); mix(uint64_t(k.ldb)); mix(uint64_t(k.ldd)); mix(uint64_t(k.d_type));
  mix(k.accumulate); mix(uint64_t(k.epilogue)); mix(k.align_a); mix(k.align_b); mix(k.align_d);
  mix(k.align_bias); mix(uint64_t(k.a_type)); mix(uint64_t(k.b_type)); mix(k.fast_accumulation);
  return h;
}

Gemm::Gemm(cudaStream_t stream, std::shared_ptr<DeviceArena> arena, size_t workspace_bytes, bool autotune,
           PluginLog log, GemmWorkspaceScope workspace_scope)
    : stream_(stream),
      arena_(std::move(arena)),
      log_(std::move(log)),
      workspace_bytes_(workspace_bytes),
      autotune_(autotune),
      workspace_scope_(workspace_scope) {
  PTDP_CALL(cublasLtCreate(&lt_));
  PTDP_CALL(cublasCreate(&blas_));
  PTDP_CALL(cublasSetStream(blas_, stream_));
  if (workspace_bytes_ > 0) {
    workspace_ = arena_->allocate(workspace_bytes_);
    PTDP_CALL(cublasSetWorkspace(blas_, workspace_.get(), workspace_bytes_));
  }
}

Gemm::~Gemm() {
  plans_.clear();
  TeardownFailures failures;
  if (blas_) PTDP_TEARDOWN_CALL(failures, cublasDestroy(blas_));
  if (lt_) PTDP_TEARDOWN_CALL(failures, cublasLtDestroy(lt_));
  log_.write_failures("kernels-fused: destroying the cuBLAS handles", failures);
}

const float* Gemm::unit_scale() {
  if (!unit_scale_) {
    unit_scale_ = arena_->allocate(sizeof(float));
    const float one = 1.0f;
    PTDP_CALL(cudaMemcpyAsync(unit_scale_.get(), &one, sizeof one, cudaMemcpyHostToDevice, stream_));
    PTDP_CALL(cudaStreamSynchronize(stream_));
  }
  return static_cast<const float*>(unit_scale_.get());
}

Gemm::Plan& Gemm::plan_for(const PlanKey& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;

  auto plan = std::make_unique<Plan>(log_);
  PTDP_CALL(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  PTDP_CALL(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  PTDP_CALL(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  const cublasLtEpilogue_t epilogue = lt_epilogue(key.epilogue);
  PTDP_CALL(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (key.epilogue == Kind::GeluAuxBias || key.epilogue == Kind::DGelu) {
    // The aux matrix is m x n like D, packed: leading dimension m (divisible by 8, see
    // gelu_epilogue_fits).
    const int64_t aux_ld = key.m;
    PTDP_CALL(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof(aux_ld)));
  }
  // Stored (column-major) shapes: A is m x k, or k x m when transposed; likewise B.
  const uint64_t a_rows = key.trans_a ? key.k : key.m, a_cols = key.trans_a ? key.m : key.k;
  const uint64_t b_rows = key.trans_b ? key.n : key.k, b_cols = key.trans_b ? key.k : key.n;
  PTDP_CALL(cublasLtMatrixLayoutCreate(&plan->a, key.a_type, a_rows, a_cols, key.lda));
  PTDP_CALL(cublasLtMatrixLayoutCreate(&plan->b, key.b_type, b_rows, b_cols, key.ldb));
  if (key.a_type != kActCudaType) {
    // FP8: cuBLASLt picks kernels that read the operands' scales from device memory only when the
    // descriptor has scale pointers as it is asked for an algorithm; each launch sets its own.
    const float* unit = unit_scale();
    PTDP_CALL(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &unit, sizeof(unit)));
    PTDP_CALL(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &unit, sizeof(unit)));
  }
  if (key.fast_accumulation) {
    const int8_t fast = 1;
    PTDP_CALL(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
  }
  PTDP_CALL(cublasLtMatrixLayoutCreate(&plan->d, key.d_type, key.m, key.n, key.ldd));

  cublasLtMatmulPreference_t preference = nullptr;
  PTDP_CALL(cublasLtMatmulPreferenceCreate(&preference));
  const bool offered = workspace_scope_ == GemmWorkspaceScope::All || key.epilogue == Kind::DGelu ||
                       key.epilogue == Kind::BGradB;
  plan->workspace_bytes = offered ? workspace_bytes_ : 0;
  const uint64_t workspace = plan->workspace_bytes;
  PTDP_CALL(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &workspace, sizeof(workspace)));
  PTDP_CALL(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                 &key.align_a, sizeof(key.align_a)));
  PTDP_CALL(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                 &key.align_b, sizeof(key.align_b)));
  PTDP_CALL(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                 &key.align_d, sizeof(key.align_d)));
  PTDP_CALL(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                 &key.align_d, sizeof(key.align_d)));
  cublasLtMatmulHeuristicResult_t results[kAutotuneCandidates]{};
  const int wanted = autotune_ ? kAutotuneCandidates : 1;
  int found_count = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  auto ask = [&] {
    status = cublasLtMatmulAlgoGetHeuristic(lt_, plan->desc, plan->a, plan->b, plan->d, plan->d, preference, wanted,
                                            results, &found_count);
    return status == CUBLAS_STATUS_SUCCESS && found_count > 0;
  };
  bool found_algo = false;
  const std::vector<cudaDataType_t> candidates = bias_types(key.epilogue);
  if (candidates.empty()) found_algo = ask();
  for (cudaDataType_t type : candidates) {
    PTDP_CALL(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)));
    if ((found_algo = ask())) {
      plan->bias_type = type;
      break;
    }
  }
  PTDP_CALL(cublasLtMatmulPreferenceDestroy(preference));
  if (!found_algo)
    throw Error(std::string("kernels-fused: cuBLASLt has no algorithm for a GEMM of ") +
                shape_text(key.m, key.n, key.k) + epilogue_text(key.epilogue) + ": " +
                (status == CUBLAS_STATUS_SUCCESS ? std::string("the heuristic returned none") : status_text(status)));
  plan->algo = results[0].algo;
  if (found_count > 1)
    for (int i = 0; i < found_count; ++i) plan->candidates.push_back(results[i].algo);
  auto [it, inserted] = plans_.emplace(key, std::move(plan));
  return *it->second;
}

void Gemm::autotune(Plan& plan, const PlanKey& key, const void* a, const void* b, void* d, float beta) {
  const std::vector<cublasLtMatmulAlgo_t> candidates = std::move(plan.candidates);
  plan.candidates.clear();
  const size_t element = key.d_type == CUDA_R_32F ? 4 : 2;
  const size_t d_bytes = size_t(key.ldd * (key.n - 1) + key.m) * element;
  void* kept = nullptr;  // pinned host copy of an accumulated D
  if (beta != 0.0f) {
    PTDP_CALL(cudaMallocHost(&kept, d_bytes));
    PTDP_CALL(cudaMemcpyAsync(kept, d, d_bytes, cudaMemcpyDeviceToHost, stream_));
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  PTDP_CALL(cudaEventCreate(&start));
  PTDP_CALL(cudaEventCreate(&stop));
  const float alpha = 1.0f;
  auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(lt_, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d, plan.d, d, plan.d, &algo,
                          plan.workspace_bytes ? workspace_.get() : nullptr, plan.workspace_bytes, stream_);
  };
  // One run to warm the algorithm's kernels, then the mean of three; a candidate cuBLASLt
  // refuses at launch is left out.
  constexpr int kTimedRuns = 3;
  std::vector<float> ms(candidates.size(), -1.0f);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (launch(candidates[i]) != CUBLAS_STATUS_SUCCESS) continue;
    PTDP_CALL(cudaEventRecord(start, stream_));
    bool ok = true;
    for (int r = 0; r < kTimedRuns && ok; ++r) ok = launch(candidates[i]) == CUBLAS_STATUS_SUCCESS;
    PTDP_CALL(cudaEventRecord(stop, stream_));
    PTDP_CALL(cudaEventSynchronize(stop));
    float elapsed = 0;
    PTDP_CALL(cudaEventElapsedTime(&elapsed, start, stop));
    if (ok) ms[i] = elapsed / kTimedRuns;
  }
  if (kept) {
    PTDP_CALL(cudaMemcpyAsync(d, kept, d_bytes, cudaMemcpyHostToDevice, stream_));
    PTDP_CALL(cudaStreamSynchronize(stream_));
    PTDP_CALL(cudaFreeHost(kept));
  }
  PTDP_CALL(cudaEventDestroy(start));
  PTDP_CALL(cudaEventDestroy(stop));

  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (ms[i] >= 0 && (ms[best] < 0 || ms[i] < ms[best])) best = i;
  if (ms[best] < 0) return;  // none ran: the heuristic's first stays, and its call says why
  plan.algo = candidates[best];
  const std::string epilogue = epilogue_text(key.epilogue);
  const std::string what = "kernels-fused: GEMM " + shape_text(key.m, key.n, key.k) +
                           (key.d_type == CUDA_R_32F ? " into fp32" : "") + epilogue.substr(0, epilogue.find(" ("));
  char line[200];
  if (best == 0) {
    std::snprintf(line, sizeof line, ": the heuristic's first of %zu algorithms is the fastest (%.3f ms)",
                  candidates.size(), double(ms[0]));
    log_.write(LogLevel::Debug, what + line);
  } else if (ms[0] < 0) {
    std::snprintf(line, sizeof line, ": the heuristic's first algorithm does not run; algorithm %zu of %zu (%.3f ms)",
                  best + 1, candidates.size(), double(ms[best]));
    log_.write(LogLevel::Info, what + line);
  } else {
    std::snprintf(line, sizeof line, ": autotuned to algorithm %zu of %zu, %.3f ms, %.1f%% less than the heuristic's first",
                  best + 1, candidates.size(), double(ms[best]), 100.0 * (1.0 - double(ms[best]) / double(ms[0])));
    log_.write(LogLevel::Info, what + line);
  }
}

void Gemm::matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const act_t* a, int64_t lda,
                  const act_t* b, int64_t ldb, void* d, cudaDataType_t d_type, int64_t ldd, float beta,
                  const Epilogue& epilogue, float alpha) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // An empty product: D keeps beta * D, which for the calls made here is D or 0; every
    // epilogue used here then leaves D and the bias gradient as they are (gelu'(x) * 0 = 0).
    if (epilogue.kind == Kind::GeluAuxBias) throw Error("kernels-fused: a GeLU GEMM with k = 0");
    const size_t element = d_type == CUDA_R_32F ? 4 : 2;
    if (beta == 0.0f) PTDP_CALL(cudaMemset2DAsync(d, ldd * element, 0, m * element, n, stream_));
    return;
  }
  const bool aux = epilogue.aux != nullptr;
  if ((epilogue.kind == Kind::GeluAuxBias || epilogue.kind == Kind::DGelu) && !aux)
    throw Error("kernels-fused: a GeLU epilogue without its GeLU input matrix");
  if (aux && !gelu_epilogue_fits(m))
    throw Error("kernels-fused: GeLU epilogue on " + std::to_string(m) + " rows (must be a multiple of 8)");
  const void* bias_in = epilogue.bias;
  const PlanKey key{trans_a, trans_b, m, n, k, lda, ldb, ldd, d_type, beta != 0.0f, epilogue.kind,
                    alignment_of(a), alignment_of(b), alignment_of(d), bias_in ? alignment_of(bias_in) : 256u};
  launch(key, a, b, d, beta, epilogue, alpha);
}

void Gemm::launch(const PlanKey& key, const void* a, const void* b, void* d, float beta, const Epilogue& epilogue,
                  float alpha, const float* a_scale, const float* b_scale) {
  Plan& plan = plan_for(key);
  const bool aux = epilogue.aux != nullptr;
  const bool grads = epilogue.kind == Kind::BGradB;
  // cuBLASLt writes a bias gradient, it does not add to it. At beta 0 the weight gradient is
  // written too, and the bias gradient with it, straight into place when it is fp32; else
  // cuBLASLt sums into scratch, which is then added.
  const bool sums_in_place = grads && beta == 0.0f && plan.bias_type == CUDA_R_32F;
  const int64_t sums = epilogue.kind == Kind::BGradB ? key.n : key.m;
  std::shared_ptr<void> scratch;
  if (grads && !sums_in_place) scratch = arena_->allocate(size_t(sums) * (plan.bias_type == CUDA_R_32F ? 4 : 2));
  const void* bias = sums_in_place ? epilogue.bias_grad : grads ? scratch.get() : epilogue.bias;
  if (epilogue.kind != Kind::None)
    PTDP_CALL(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  if (aux) {
    const void* aux_pointer = epilogue.aux;
    PTDP_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                             &aux_pointer, sizeof(aux_pointer)));
  }
  if (a_scale) {
    PTDP_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)));
    PTDP_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)));
  }
  if (!plan.candidates.empty()) autotune(plan, key, a, b, d, beta);
  PTDP_CALL(cublasLtMatmul(lt_, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d, plan.d, d, plan.d,
                           &plan.algo, plan.workspace_bytes ? workspace_.get() : nullptr, plan.workspace_bytes,
                           stream_));
  if (scratch) accumulate_sums(scratch.get(), plan.bias_type == kActCudaType, sums, epilogue.bias_grad, stream_);
}

namespace {

void check_fp8_shape(int64_t m, int64_t n, int64_t k) {
  if (k == 0 || k % 16 != 0 || n % 16 != 0)
    throw Error("kernels-fused: an FP8 GEMM of " + shape_text(m, n, k) +
                ": cuBLASLt's FP8 kernels need k and n to be positive multiples of 16");
}

}  // namespace

Gemm::PlanKey Gemm::fp8_key(bool a_e5m2, bool b_e5m2, int64_t m, int64_t n, int64_t k, cudaDataType_t d_type,
                            float beta, Epilogue::Kind epilogue, uint32_t align_a, uint32_t align_b,
                            uint32_t align_d, uint32_t align_bias, bool fast_accumulation) {
  // Column-major: Dᵀ[n, m] = B[n, k] · Aᵀ, so cuBLAS's A is our B (transposed: stored k x n, the
  // "T" of the TN layout FP8 needs) and its B is our A (stored k x m). An aux matrix has Dᵀ's
  // layout, leading dimension n.
  PlanKey key{true, false, n, m, k, k, k, n, d_type, beta != 0.0f, epilogue, align_b, align_a, align_d, align_bias};
  key.a_type = b_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
  key.b_type = a_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
  key.fast_accumulation = fast_accumulation;
  return key;
}

void Gemm::fp8_nt(const Fp8Matrix& a, const Fp8Matrix& b, int64_t m, int64_t n, int64_t k, void* d,
                  cudaDataType_t d_type, float beta, const Epilogue& epilogue, bool fast_accumulation) {
  if (m == 0 || n == 0) return;
  check_fp8_shape(m, n, k);
  if (a.e5m2 && b.e5m2) throw Error("kernels-fused: an FP8 GEMM of two E5M2 operands (cuBLASLt takes at most one)");
  if (epilogue.kind == Kind::DGelu || epilogue.kind == Kind::BGradB)
    throw Error("kernels-fused: an FP8 GEMM with a gradient epilogue (fp8_nt takes none, a bias, or bias + GeLU)");
  if (epilogue.kind == Kind::GeluAuxBias && (!epilogue.aux || !gelu_epilogue_fits(n) || d_type != kActCudaType))
    throw Error("kernels-fused: an FP8 GEMM's GeLU epilogue needs a bf16 D and its GeLU input matrix, " +
                std::to_string(n) + " wide (a multiple of 8)");
  const PlanKey key = fp8_key(a.e5m2, b.e5m2, m, n, k, d_type, beta, epilogue.kind, alignment_of(a.data),
                              alignment_of(b.data), alignment_of(d), epilogue.bias ? alignment_of(epilogue.bias) : 256u,
                              fast_accumulation);
  launch(key, b.data, a.data, d, beta, epilogue, 1.0f, b.scale_inv, a.scale_inv);
}

bool Gemm::fp8_nt_offers(Epilogue::Kind epilogue, bool a_e5m2, int64_t m, int64_t n, int64_t k,
                         bool fast_accumulation) {
  check_fp8_shape(m, n, k);
  try {
    plan_for(fp8_key(a_e5m2, false, m, n, k, kActCudaType, 0.0f, epilogue, 256, 256, 256, 256, fast_accumulation));
    return true;
  } catch (const Error&) {
    return false;  // plan_for's refusal: the heuristic offered no algorithm
  }
}

void Gemm::linear_forward(const act_t* x, const act_t* weight, const act_t* bias, act_t* y, int64_t rows, int64_t in,
                          int64_t out) {
  // Column-major: y^T[out, rows] = W^T-as-stored(in x out)^T * x^T(in x rows).
  Epilogue e;
  if (bias) e.kind = Epilogue::Kind::Bias, e.bias = bias;
  matmul(true, false, out, rows, in, weight, in, x, in, y, kActCudaType, out, 0.0f, e);
}

void Gemm::linear_forward_gelu(const act_t* x, const act_t* weight, const act_t* bias, act_t* y, act_t* pre_gelu,
                               int64_t rows, int64_t in, int64_t out) {
  // As linear_forward; the aux matrix has D's layout, so pre_gelu is [rows, out] row-major too.
  Epilogue e;
  e.kind = Epilogue::Kind::GeluAuxBias;
  e.bias = bias;
  e.aux = pre_gelu;
  matmul(true, false, out, rows, in, weight, in, x, in, y, kActCudaType, out, 0.0f, e);
}

void Gemm::linear_backward_input_dgelu(const act_t* dy, const act_t* weight, const act_t* pre_gelu, act_t* dx,
                                       int64_t rows, int64_t in, int64_t out) {
  // As linear_backward_input: D (column-major in x rows) is dx [rows, in] row-major, and the aux
  // matrix has D's layout (pre_gelu [rows, in]).
  Epilogue e;
  e.kind = Epilogue::Kind::DGelu;
  e.aux = const_cast<act_t*>(pre_gelu);  // read, not written, by DGELU
  matmul(false, false, in, rows, out, weight, in, dy, out, dx, kActCudaType, in, 0.0f, e);
}

void Gemm::linear_backward_input(const act_t* dy, const act_t* weight, act_t* dx, int64_t rows, int64_t in,
                                 int64_t out, float alpha) {
  // Column-major: dx^T[in, rows] = W-as-stored(in x out) * dy^T(out x rows).
  matmul(false, false, in, rows, out, weight, in, dy, out, dx, kActCudaType, in, 0.0f, {}, alpha);
}

void Gemm::linear_backward_weight(const act_t* dy, const act_t* x, float* dweight, int64_t rows, int64_t in,
                                  int64_t out, float* dbias, float alpha, bool accumulate) {
  if (dbias && alpha != 1.0f) throw Error("kernels-fused: a bias gradient from a weight-gradient GEMM with alpha != 1");
  // Column-major: dW^T[in, out] += x^T(in x rows) * dy(rows x out). op(B) = dy is k x n, so the
  // BGRADB sum over k is the column sum of dy over the rows: the bias gradient, length out.
  Epilogue e;
  if (dbias) e.kind = Epilogue::Kind::BGradB, e.bias_grad = dbias;
  matmul(false, true, in, out, rows, x, in, dy, out, dweight, CUDA_R_32F, in, accumulate ? 1.0f : 0.0f, e, alpha);
}

void Gemm::batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const act_t* a, int64_t lda,
                   int64_t stride_a, const act_t* b, int64_t ldb, int64_t stride_b, act_t* c, int64_t ldc,
                   int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  PTDP_CALL(cublasGemmStridedBatchedEx(
      blas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, int(m), int(n), int(k), &alpha,
      a, kActCudaType, int(lda), stride_a, b, kActCudaType, int(ldb), stride_b, &beta, c, kActCudaType, int(ldc),
      stride_c, int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
