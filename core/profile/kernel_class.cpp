#include "profile/kernel_class.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace ptdp {

namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// kernels-fused's kernels by the start of their function name (the files they live in have the
// same names: layer_norm.cu, bias_gelu.cu, ...).
const std::pair<const char*, KernelClass> kFusedPrefixes[] = {
    {"adam", KernelClass::Adam},
    {"bias_gelu", KernelClass::BiasGelu},
    {"layer_norm", KernelClass::LayerNorm},
    {"bias_dropout_add", KernelClass::BiasDropoutAdd},
    {"column_sum", KernelClass::BiasGrad},
    {"finish_column_sums", KernelClass::BiasGrad},
    {"accumulate_sums", KernelClass::BiasGrad},
    {"square_sum_chunks", KernelClass::GradNorm},
    {"sum_partials", KernelClass::GradNorm},
    {"cross_entropy", KernelClass::CrossEntropy},
    {"softmax", KernelClass::Softmax},
    {"embedding", KernelClass::Embedding},
    {"position_grad", KernelClass::Embedding},
    {"word_grad", KernelClass::Embedding},
    {"dropout_grad", KernelClass::Embedding},
    {"fp8_", KernelClass::Fp8Cast},
};

}  // namespace

const char* kernel_class_name(KernelClass c) {
  switch (c) {
    case KernelClass::Gemm: return "GEMM";
    case KernelClass::FlashAttention: return "flash attention";
    case KernelClass::Softmax: return "softmax (unfused attention)";
    case KernelClass::Adam: return "Adam";
    case KernelClass::BiasGelu: return "bias + GeLU";
    case KernelClass::LayerNorm: return "LayerNorm";
    case KernelClass::BiasDropoutAdd: return "bias + dropout + add";
    case KernelClass::BiasGrad: return "bias gradients (column sums)";
    case KernelClass::GradNorm: return "grad norm";
    case KernelClass::CrossEntropy: return "cross entropy";
    case KernelClass::Embedding: return "embedding";
    case KernelClass::Collectives: return "collectives (NCCL)";
    case KernelClass::Copies: return "copies and memsets";
    case KernelClass::Fp8Cast: return "FP8 casts";
    case KernelClass::Other: return "other";
  }
  return "other";
}

std::string kernel_function_name(const std::string& demangled) {
  // The name ends where the argument list (or template arguments) of the outermost name begins.
  size_t end = demangled.size();
  int depth = 0;
  for (size_t i = 0; i < demangled.size(); ++i) {
    const char c = demangled[i];
    if (c == '(' && depth == 0 && demangled.compare(i, 21, "(anonymous namespace)") == 0) {
      i += 20;
      continue;
    }
    if ((c == '(' || c == '<') && depth == 0) {
      end = i;
      break;
    }
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
  }
  std::string head = demangled.substr(0, end);
  const size_t space = head.rfind(' ');  // a return type ("void ")
  if (space != std::string::npos) head = head.substr(space + 1);
  const size_t scope = head.rfind("::");
  return scope == std::string::npos ? head : head.substr(scope + 2);
}

KernelClass classify(const DeviceActivity& activity) {
  if (activity.kind != DeviceActivity::Kind::Kernel) return KernelClass::Copies;
  const std::string name = lower(activity.name);
  if (contains(name, "nccl")) return KernelClass::Collectives;
  // cuDNN's attention kernels before the GEMM rules: some are built from CUTLASS too.
  if (contains(name, "sdpa") || contains(name, "flash") || contains(name, "fmha")) return KernelClass::FlashAttention;
  if (contains(activity.name, "ptdp::fused::")) {
    const std::string function = kernel_function_name(activity.name);
    for (const auto& [prefix, c] : kFusedPrefixes)
      if (function.rfind(prefix, 0) == 0) return c;
    return KernelClass::Other;
  }
  for (const char* gemm : {"gemm", "nvjet", "xmma", "cutlass", "cublas", "matmul"})
    if (contains(name, gemm)) return KernelClass::Gemm;
  return KernelClass::Other;
}

}  // namespace ptdp
