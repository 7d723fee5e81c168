// The kernels-fused plugin's entry symbol and configuration schema.
#include "kernels_by_precision.hpp"
#include "ptdp/plugin.hpp"

namespace {

#if PTDP_HAVE_CUDNN_FRONTEND
#define PTDP_FUSED_DEFAULT_ATTENTION "\"flash\""
#else
#define PTDP_FUSED_DEFAULT_ATTENTION "\"unfused\""
#endif

const ptdp::ConfigKeySpec kSchema[] = {
    {"attention", ptdp::ConfigType::String, PTDP_FUSED_DEFAULT_ATTENTION, 0, 0, "flash|unfused",
     "flash: cuDNN's fused scaled-dot-product attention (the default when built with the cuDNN frontend); "
     "unfused: the paper's strided-batched GEMMs and fused scale+mask+softmax"},
    {"gemm_workspace_mb", ptdp::ConfigType::Int, "32", 0, 4096, nullptr,
     "cuBLAS and cuBLASLt workspace, MiB; 0: none for cuBLASLt (only algorithms that need none)"},
    {"gemm_workspace_scope", ptdp::ConfigType::String, "\"gradient_epilogues\"", 0, 0, "gradient_epilogues|all",
     "which cuBLASLt GEMMs are offered the workspace: gradient_epilogues, those with the DGELU or BGRADB epilogue "
     "(the others then run kernels that need no memset before each launch); all: every one"},
    // Off by default: on the H200 the 1.3B step was no faster with it (BENCHMARKS.md, 2026-12-02).
    {"gemm_autotune", ptdp::ConfigType::Bool, "false", 0, 0, nullptr,
     "each GEMM shape's cuBLASLt algorithm timed at its first call among the heuristic's first 8, the fastest kept; "
     "false: the heuristic's first"},
    {"gelu_epilogue", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "FC1's bias + GeLU in its GEMM's cuBLASLt epilogue (GELU_AUX_BIAS), and dGeLU in the FC2 input-gradient "
     "GEMM's (DGELU); false: the fused bias + GeLU kernels"},
    // Off by default: on the H200 the column-sum kernels made the 1.3B step 0.7% shorter at
    // global batch 32 (BENCHMARKS.md, 2026-12-03 afternoon).
    {"bias_grad_epilogue", ptdp::ConfigType::Bool, "false", 0, 0, nullptr,
     "bias gradients summed in the weight-gradient GEMMs' epilogues (BGRADB): QKV's, FC1's under gelu_epilogue, and "
     "without dropout the projection's and FC2's unless layer_norm_bias_grads sums them; false: column-sum kernels"},
    {"fused_layer_norm_backward", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "LayerNorm's backward in one cooperative launch that reads its inputs once; false: column sums and the input "
     "gradient in separate launches"},
    {"fused_residual_layer_norm", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "the attention half's bias + dropout + residual add and the MLP half's LayerNorm in one kernel; false: two"},
    {"layer_norm_bias_grads", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "without dropout, the projection's and FC2's bias gradients summed by the LayerNorm backward kernels that read "
     "those gradients as their residual input; false: as bias_grad_epilogue says"},
    // Off by default: on the H200 none of its three kernels was faster than the two passes
    // (BENCHMARKS.md, 2026-12-02 night).
    {"one_pass_cross_entropy", ptdp::ConfigType::Bool, "false", 0, 0, nullptr,
     "on an unsplit vocabulary (tensor-parallel size 1), the loss and the logits' gradient in one kernel in forward, "
     "reading the logits once; false: the loss in forward and the gradient in backward, two passes"},
    {"first_backward_writes_gradients", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "on the step's first backward the weight-gradient GEMMs write the blocks' weight gradients (beta 0), so no "
     "pass zeroes them first and none reads the zeros; false: they are zeroed, then added to"},
    {"fp8_forward_fast_accumulation", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "under precision.fp8, the forward FP8 GEMMs with cuBLASLt's fast accumulation (partial sums kept in the tensor "
     "cores' precision longer); false: promoted to fp32 more often"},
    {"fp8_gradient_fast_accumulation", ptdp::ConfigType::Bool, "false", 0, 0, nullptr,
     "under precision.fp8, the input- and weight-gradient FP8 GEMMs with fast accumulation; false: the split "
     "accumulation that gradients are usually given"},
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::LayerKernels, ptdp::LayerKernels, ptdp::fused::KernelsByPrecision, "kernels-fused", "0.1.0",
            kSchema)
