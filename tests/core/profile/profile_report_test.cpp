// The profile table from synthetic records: time inside the profiled steps only, the idle share
// as the time no activity ran on any stream, rates from the model's FLOPs and the bytes copied
// against the device's peaks, and the clock and power samples of the steps.
#include <gtest/gtest.h>

#include "manifest/model_math.hpp"
#include "profile/profile_report.hpp"

namespace ptdp {
namespace {

DeviceActivity on(uint32_t stream, const std::string& name, double start, double end,
                  DeviceActivity::Kind kind = DeviceActivity::Kind::Kernel, uint64_t bytes = 0) {
  DeviceActivity a;
  a.kind = kind;
  a.name = name;
  a.stream = stream;
  a.start_us = start;
  a.duration_us = end - start;
  a.bytes = bytes;
  return a;
}

const std::string kGemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas";
const std::string kFlash = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop";
const std::string kLayerNorm = "void ptdp::fused::(anonymous namespace)::layer_norm_forward_kernel<8>(float*)";

const ProfileRow* row(const ProfileReport& r, KernelClass c) {
  for (const ProfileRow& row : r.rows)
    if (row.kind == c) return &row;
  return nullptr;
}

struct Fixture {
  std::vector<ProfileWindow> windows{{1000, 2000}, {5000, 6000}};
  std::vector<DeviceActivity> activities{
      on(7, kGemm, 1000, 1400),
      on(7, kLayerNorm, 1400, 1500),
      on(9, kFlash, 1200, 1300),  // beside the GEMM on another stream
      on(8, "copy HtoD", 1900, 2100, DeviceActivity::Kind::Copy, 2000000),  // half inside the first step
      on(7, kGemm, 3000, 3500),   // between the profiled steps
      on(7, kGemm, 5000, 5600),
      on(7, "mystery_kernel", 5700, 5750),
  };
  std::vector<DeviceSample> samples{{1500, 1800, 600}, {1600, 1700, 650}, {3000, 1000, 100}};
  ModelWork work{1e9, 2e8};
  DevicePeaks peaks{"Test GPU", 10, 100, 1980, 700, "test figures"};
};

TEST(ProfileReport, TimeInsideTheStepsByClassAndTheIdleShare) {
  Fixture f;
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  EXPECT_EQ(r.steps, 2);
  EXPECT_DOUBLE_EQ(r.step_us, 2000);
  // Busy: [1000, 1500] and [1900, 2000] in the first step, [5000, 5600] and [5700, 5750] in the second.
  EXPECT_DOUBLE_EQ(r.busy_us, 1250);
  EXPECT_DOUBLE_EQ(r.idle_share, 0.375);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].kind, KernelClass::Gemm);
  EXPECT_DOUBLE_EQ(r.rows[0].busy_us, 1000);
  EXPECT_EQ(r.rows[0].launches, 2);
  EXPECT_DOUBLE_EQ(r.rows[0].share, 0.5);
  // Equal times keep the classes' order.
  EXPECT_EQ(r.rows[1].kind, KernelClass::FlashAttention);
  EXPECT_EQ(r.rows[2].kind, KernelClass::LayerNorm);
  EXPECT_EQ(r.rows[3].kind, KernelClass::Copies);
  EXPECT_EQ(r.rows[4].kind, KernelClass::Other);
  ASSERT_EQ(r.top_other.size(), 1u);
  EXPECT_EQ(r.top_other[0].first, "mystery_kernel");
  EXPECT_DOUBLE_EQ(r.top_other[0].second, 50);
}

TEST(ProfileReport, TheLargestKernelsByName) {
  Fixture f;
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  // The GEMM between the steps does not count; the copy counts its half inside the first step.
  ASSERT_EQ(r.top_kernels.size(), 5u);
  EXPECT_EQ(r.top_kernels[0].name, kGemm + " (GEMM)");
  EXPECT_DOUBLE_EQ(r.top_kernels[0].us, 1000);
  EXPECT_EQ(r.top_kernels[0].launches, 2);
  EXPECT_EQ(r.top_kernels[4].name, "mystery_kernel (other)");
  EXPECT_DOUBLE_EQ(r.top_kernels[4].us, 50);
  const std::string text = format_profile_report(r, "rank 0");
  EXPECT_NE(text.find("kernel: 0.500 ms/step  " + kGemm + " (GEMM) (1.0 a step, 500.0 us each)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kernel: 0.050 ms/step  layer_norm_forward_kernel (LayerNorm)"), std::string::npos) << text;
}

TEST(ProfileReport, IdleGapsByWhatRanBeforeAndAfter) {
  Fixture f;
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  // First step: idle from the LayerNorm's end (1500) to the copy (1900). Second: from the GEMM's
  // end to the mystery kernel (100 us), and from that kernel's end to the step's (250 us).
  ASSERT_EQ(r.top_idle.size(), 3u);
  EXPECT_EQ(r.top_idle[0].before, "layer_norm_forward_kernel (LayerNorm)");
  EXPECT_EQ(r.top_idle[0].after, "copy HtoD (copies and memsets)");
  EXPECT_DOUBLE_EQ(r.top_idle[0].us, 400);
  EXPECT_EQ(r.top_idle[1].before, "mystery_kernel (other)");
  EXPECT_EQ(r.top_idle[1].after, "step end");
  EXPECT_DOUBLE_EQ(r.top_idle[1].us, 250);
  EXPECT_EQ(r.top_idle[2].before, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas (GEMM)");
  EXPECT_DOUBLE_EQ(r.top_idle[2].us, 100);
  double total = 0;
  for (const IdleGap& g : r.top_idle) total += g.us;
  EXPECT_DOUBLE_EQ(total, r.step_us - r.busy_us);
}

TEST(ProfileReport, RatesAgainstThePeaks) {
  Fixture f;
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  // GEMM: 2 steps x 1e9 FLOPs in 1000 us; flash attention: 2 x 2e8 in 100 us.
  EXPECT_DOUBLE_EQ(row(r, KernelClass::Gemm)->rate, 2.0);
  EXPECT_DOUBLE_EQ(row(r, KernelClass::Gemm)->of_peak, 0.2);
  EXPECT_DOUBLE_EQ(row(r, KernelClass::FlashAttention)->rate, 4.0);
  EXPECT_STREQ(row(r, KernelClass::FlashAttention)->unit, "TFLOP/s");
  // The copy's bytes inside the step: 1e6 in 100 us.
  EXPECT_DOUBLE_EQ(row(r, KernelClass::Copies)->rate, 10.0);
  EXPECT_STREQ(row(r, KernelClass::Copies)->unit, "GB/s");
  EXPECT_DOUBLE_EQ(row(r, KernelClass::Copies)->of_peak, 0.1);
  EXPECT_EQ(row(r, KernelClass::LayerNorm)->rate, 0.0);  // no count of its work
}

TEST(ProfileReport, WithoutFlashAttentionTheGemmsCarryTheAttentionFlops) {
  Fixture f;
  f.activities.erase(f.activities.begin() + 2);
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  EXPECT_DOUBLE_EQ(row(r, KernelClass::Gemm)->rate, 2 * 1.2e9 / 1000e-6 / 1e12);
}

TEST(ProfileReport, UnknownPeaksGiveNoShareOfPeak) {
  Fixture f;
  f.peaks = DevicePeaks{};
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  EXPECT_DOUBLE_EQ(row(r, KernelClass::Gemm)->rate, 2.0);
  EXPECT_EQ(row(r, KernelClass::Gemm)->of_peak, 0.0);
  EXPECT_NE(format_profile_report(r, "rank 0").find("not known for this device"), std::string::npos);
}

TEST(ProfileReport, ClockAndPowerOfTheStepsOnly) {
  Fixture f;
  const ProfileReport r = build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks);
  EXPECT_EQ(r.samples, 2);
  EXPECT_DOUBLE_EQ(r.sm_clock_mean, 1750);
  EXPECT_DOUBLE_EQ(r.sm_clock_min, 1700);
  EXPECT_DOUBLE_EQ(r.sm_clock_max, 1800);
  EXPECT_DOUBLE_EQ(r.power_mean, 625);
  EXPECT_DOUBLE_EQ(r.power_max, 650);
}

TEST(ProfileReport, TheTableNamesEveryClassTheIdleTimeAndTheDevice) {
  Fixture f;
  const std::string text =
      format_profile_report(build_profile_report(f.activities, f.samples, f.windows, f.work, f.peaks), "rank 0 (pp 0)");
  for (const char* part : {"profile of rank 0 (pp 0): 2 steps, 1.0 ms a step on Test GPU", "GEMM", "flash attention",
                           "LayerNorm", "copies and memsets", "idle", "37.5%", "2.0 TFLOP/s", "20.0%", "10.0 GB/s",
                           "mystery_kernel", "idle: 0.200 ms/step  after layer_norm_forward_kernel (LayerNorm) before copy HtoD",
                           "SM clock 1750 MHz mean (1700..1800; the device's highest 1980)", "of a 700 W cap"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in\n" << text;
}

TEST(ProfileReport, ModelWorkSplitsThePapersCount) {
  RunConfig c;
  c.model.layers = 24;
  c.model.hidden = 2048;
  c.model.heads = 16;
  c.model.seq_len = 2048;
  c.model.vocab = 51200;
  c.parallel.global_batch = 8;
  for (const char* recompute : {"none", "full"}) {
    c.parallel.recompute = recompute;
    const ModelWork w = model_work(c, 2);
    EXPECT_DOUBLE_EQ(w.gemm_flops + w.attention_flops, flops_per_step(c) / 2) << recompute;
    const double attention = (c.parallel.recompute == "full" ? 16.0 : 12.0) * 8 * 2048.0 * 2048 * 24 * 2048;
    EXPECT_DOUBLE_EQ(w.attention_flops, attention / 2) << recompute;
  }
}

}  // namespace
}  // namespace ptdp
