// Device work is filed under its class by name: the libraries' naming schemes and kernels-fused's
// function names, as CUPTI reports them (demangled).
#include <gtest/gtest.h>

#include "profile/kernel_class.hpp"

namespace ptdp {
namespace {

DeviceActivity kernel(const std::string& name) {
  DeviceActivity a;
  a.name = name;
  return a;
}

TEST(KernelClass, FunctionNameDropsScopesTemplatesAndArguments) {
  EXPECT_EQ(kernel_function_name("void ptdp::fused::(anonymous namespace)::column_sum_kernel<8>(__nv_bfloat16 const*, "
                                 "long, long, long, float*)"),
            "column_sum_kernel");
  EXPECT_EQ(kernel_function_name("ptdp::fused::adam_kernel(ptdp::fused::AdamArgs)"), "adam_kernel");
  EXPECT_EQ(kernel_function_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"),
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1");
}

TEST(KernelClass, LibraryKernelsByNamingScheme) {
  EXPECT_EQ(classify(kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
                            "segment_k_off_kernel__5x_cublas")),
            KernelClass::Gemm);
  EXPECT_EQ(classify(kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT")), KernelClass::Gemm);
  EXPECT_EQ(classify(kernel("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_32x1_nn_align8>"
                            "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_32x1_nn_align8::Params)")),
            KernelClass::Gemm);
  EXPECT_EQ(classify(kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0")),
            KernelClass::FlashAttention);
  EXPECT_EQ(classify(kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)")),
            KernelClass::Collectives);
  EXPECT_EQ(classify(kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)")),
            KernelClass::Other);
}

TEST(KernelClass, KernelsFusedByFunctionName) {
  const std::string scope = "void ptdp::fused::(anonymous namespace)::";
  const std::pair<const char*, KernelClass> cases[] = {
      {"adam_kernel(ptdp::fused::AdamChunk const*, int)", KernelClass::Adam},
      {"bias_gelu_forward_kernel<8>(__nv_bfloat16 const*, float const*, __nv_bfloat16*, long, long)", KernelClass::BiasGelu},
      {"layer_norm_input_grad_kernel<8>(float*)", KernelClass::LayerNorm},
      {"bias_dropout_add_backward_kernel<8>(float*)", KernelClass::BiasDropoutAdd},
      {"finish_column_sums_kernel(float const*, int, long, float*)", KernelClass::BiasGrad},
      {"accumulate_sums_kernel<float>(float const*, long, float*)", KernelClass::BiasGrad},
      {"square_sum_chunks_kernel(float*)", KernelClass::GradNorm},
      {"cross_entropy_row_stats_kernel<8>(__nv_bfloat16 const*)", KernelClass::CrossEntropy},
      {"softmax_forward_warp<4>(float*)", KernelClass::Softmax},
      {"word_grad_kernel(float*)", KernelClass::Embedding},
      {"fp8_cast_kernel<(__nv_fp8_interpretation_t)0>(__nv_bfloat16 const*, long)", KernelClass::Fp8Cast},
      {"fp8_amax_kernel(__nv_bfloat16 const*, long, float*)", KernelClass::Fp8Cast},
      {"cast_chunks_kernel(float*)", KernelClass::Other},
  };
  for (const auto& [name, expected] : cases)
    EXPECT_EQ(kernel_class_name(classify(kernel(scope + name))), std::string(kernel_class_name(expected))) << name;
  // A name shared with another library's kernel counts only inside kernels-fused.
  EXPECT_EQ(classify(kernel("void other::adam_kernel(float*)")), KernelClass::Other);
}

TEST(KernelClass, CopiesAndMemsetsAreCopies) {
  DeviceActivity copy;
  copy.kind = DeviceActivity::Kind::Copy;
  copy.name = "copy HtoD";
  EXPECT_EQ(classify(copy), KernelClass::Copies);
  copy.kind = DeviceActivity::Kind::Memset;
  EXPECT_EQ(classify(copy), KernelClass::Copies);
}

}  // namespace
}  // namespace ptdp
