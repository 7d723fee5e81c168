#include "profile/profile_report.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace ptdp {

namespace {

// How many kernels the table names one by one: enough to reach the elementwise kernels of a
// transformer step past its GEMM variants.
constexpr size_t kTopKernels = 15;

// [start, end) of `a` that lies inside the windows, as pieces.
std::vector<std::pair<double, double>> clipped(const DeviceActivity& a, const std::vector<ProfileWindow>& windows) {
  std::vector<std::pair<double, double>> pieces;
  const double end = a.start_us + a.duration_us;
  for (const ProfileWindow& w : windows) {
    const double s = std::max(a.start_us, w.start_us), e = std::min(end, w.end_us);
    if (e > s) pieces.emplace_back(s, e);
  }
  return pieces;
}

double union_length(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) total += cur_e - cur_s;
    cur_s = s, cur_e = e, open = true;
  }
  if (open) total += cur_e - cur_s;
  return total;
}

// An activity as the idle breakdown names it: its class and the start of its name.
std::string short_name(const DeviceActivity& a, size_t max_length = 48) {
  // "void ns::(anonymous namespace)::layer_norm_forward_kernel<8>(float*)" -> "layer_norm_forward_kernel"
  std::string name = a.name;
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  for (size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;) name.erase(at, 23);
  name = name.substr(0, name.find_first_of("<("));
  if (const size_t scope = name.rfind("::"); scope != std::string::npos) name = name.substr(scope + 2);
  if (name.size() > max_length) name = name.substr(0, max_length);
  return fmt::format("{} ({})", name, kernel_class_name(classify(a)));
}

std::vector<IdleGap> idle_gaps(const std::vector<DeviceActivity>& activities, const std::vector<ProfileWindow>& windows) {
  struct Piece {
    double start, end;
    const DeviceActivity* activity;
  };
  std::map<std::pair<std::string, std::string>, IdleGap> by_neighbours;
  auto add = [&](const std::string& before, const std::string& after, double us) {
    IdleGap& g = by_neighbours[{before, after}];
    g.before = before, g.after = after, g.us += us, g.count += 1;
  };
  for (const ProfileWindow& w : windows) {
    std::vector<Piece> pieces;
    for (const DeviceActivity& a : activities) {
      const double s = std::max(a.start_us, w.start_us), e = std::min(a.start_us + a.duration_us, w.end_us);
      if (e > s) pieces.push_back({s, e, &a});
    }
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
    double busy_until = w.start_us;
    std::string last = "step start";
    for (const Piece& p : pieces) {
      if (p.start > busy_until) add(last, short_name(*p.activity), p.start - busy_until);
      if (p.end >= busy_until) last = short_name(*p.activity);
      busy_until = std::max(busy_until, p.end);
    }
    if (w.end_us > busy_until) add(last, "step end", w.end_us - busy_until);
  }
  std::vector<IdleGap> gaps;
  for (auto& [key, gap] : by_neighbours) gaps.push_back(gap);
  std::sort(gaps.begin(), gaps.end(), [](const IdleGap& a, const IdleGap& b) { return a.us > b.us; });
  return gaps;
}

}  // namespace

ModelWork model_work(const RunConfig& config, int world_size) {
  const RunConfig::Model& m = config.model;
  const bool recompute = config.parallel.recompute == "full";
  const double B = static_cast<double>(config.parallel.global_batch), s = m.seq_len, l = m.layers, h = m.hidden,
               V = m.vocab;
  const double base = B * s * l * h * h;
  // The s/(6h) term of the paper's count: 72 (96 with the recomputed forward) · B·s·l·h²·s/(6h).
  const double attention = (recompute ? 96 : 72) * base * s / (6 * h);
  const double total = recompute ? 96 * base * (1 + s / (6 * h) + V / (16 * l * h))
                                 : 72 * base * (1 + s / (6 * h) + V / (12 * l * h));
  const double ranks = std::max(world_size, 1);
  return ModelWork{(total - attention) / ranks, attention / ranks};
}

ProfileReport build_profile_report(const std::vector<DeviceActivity>& activities,
                                   const std::vector<DeviceSample>& samples, const std::vector<ProfileWindow>& windows,
                                   const ModelWork& work, const DevicePeaks& peaks) {
  ProfileReport r;
  r.peaks = peaks;
  r.steps = static_cast<int>(windows.size());
  for (const ProfileWindow& w : windows) r.step_us += std::max(0.0, w.end_us - w.start_us);

  std::vector<ProfileRow> rows(kKernelClassCount);
  for (int c = 0; c < kKernelClassCount; ++c) rows[static_cast<size_t>(c)].kind = static_cast<KernelClass>(c);
  std::vector<double> bytes(kKernelClassCount, 0.0);
  std::vector<std::pair<double, double>> all;
  std::map<std::string, double> other;
  std::map<std::string, KernelTotal> by_name;
  for (const DeviceActivity& a : activities) {
    const auto pieces = clipped(a, windows);
    if (pieces.empty()) continue;
    double inside = 0;
    for (const auto& [s, e] : pieces) inside += e - s;
    const KernelClass c = classify(a);
    ProfileRow& row = rows[static_cast<size_t>(c)];
    row.busy_us += inside;
    row.launches += 1;
    // A copy cut by a window's edge counts the bytes of the part inside.
    if (a.duration_us > 0) bytes[static_cast<size_t>(c)] += static_cast<double>(a.bytes) * inside / a.duration_us;
    if (c == KernelClass::Other) other[a.name] += inside;
    // Longer than the idle breakdown's names: cuBLAS's differ only past their tile shapes.
    KernelTotal& total = by_name[short_name(a, 110)];
    total.us += inside;
    total.launches += 1;
    all.insert(all.end(), pieces.begin(), pieces.end());
  }
  r.busy_us = union_length(std::move(all));
  r.idle_share = r.step_us > 0 ? std::max(0.0, 1.0 - r.busy_us / r.step_us) : 0.0;

  // Rates: the model's FLOPs for the matrix work (with unfused attention its products are GEMMs
  // too), bytes moved for copies.
  const double steps = r.steps;
  ProfileRow& gemm = rows[static_cast<size_t>(KernelClass::Gemm)];
  ProfileRow& flash = rows[static_cast<size_t>(KernelClass::FlashAttention)];
  const double gemm_flops = steps * (work.gemm_flops + (flash.busy_us > 0 ? 0.0 : work.attention_flops));
  auto tflops = [&](ProfileRow& row, double flops) {
    if (row.busy_us <= 0 || flops <= 0) return;
    row.rate = flops / (row.busy_us * 1e-6) / 1e12;
    row.unit = "TFLOP/s";
    if (peaks.bf16_tflops > 0) row.of_peak = row.rate / peaks.bf16_tflops;
  };
  tflops(gemm, gemm_flops);
  tflops(flash, steps * work.attention_flops);
  ProfileRow& copies = rows[static_cast<size_t>(KernelClass::Copies)];
  const double copy_bytes = bytes[static_cast<size_t>(KernelClass::Copies)];
  if (copies.busy_us > 0 && copy_bytes > 0) {
    copies.rate = copy_bytes / (copies.busy_us * 1e-6) / 1e9;
    copies.unit = "GB/s";
    if (peaks.memory_gbs > 0) copies.of_peak = copies.rate / peaks.memory_gbs;
  }

  for (ProfileRow& row : rows) {
    if (row.launches == 0) continue;
    row.share = r.step_us > 0 ? row.busy_us / r.step_us : 0.0;
    r.rows.push_back(row);
  }
  std::stable_sort(r.rows.begin(), r.rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.busy_us > b.busy_us; });
  r.top_other.assign(other.begin(), other.end());
  std::sort(r.top_other.begin(), r.top_other.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (r.top_other.size() > 5) r.top_other.resize(5);
  for (auto& [name, total] : by_name) {
    total.name = name;
    r.top_kernels.push_back(std::move(total));
  }
  // Equal times keep the names' order, so the table reads the same on every run.
  std::stable_sort(r.top_kernels.begin(), r.top_kernels.end(),
                   [](const KernelTotal& a, const KernelTotal& b) { return a.us > b.us; });
  if (r.top_kernels.size() > kTopKernels) r.top_kernels.resize(kTopKernels);
  r.top_idle = idle_gaps(activities, windows);
  if (r.top_idle.size() > 5) r.top_idle.resize(5);

  bool first = true;
  for (const DeviceSample& s : samples) {
    const bool inside = std::any_of(windows.begin(), windows.end(), [&](const ProfileWindow& w) {
      return s.time_us >= w.start_us && s.time_us <= w.end_us;
    });
    if (!inside) continue;
    r.samples += 1;
    r.sm_clock_mean += s.sm_clock_mhz;
    r.power_mean += s.power_w;
    r.sm_clock_min = first ? s.sm_clock_mhz : std::min(r.sm_clock_min, s.sm_clock_mhz);
    r.sm_clock_max = std::max(r.sm_clock_max, s.sm_clock_mhz);
    r.power_max = std::max(r.power_max, s.power_w);
    first = false;
  }
  if (r.samples > 0) {
    r.sm_clock_mean /= r.samples;
    r.power_mean /= r.samples;
  }
  return r;
}

std::string format_profile_report(const ProfileReport& r, const std::string& title) {
  std::string out = fmt::format("profile of {}: {} step{}, {:.1f} ms a step on {}\n", title, r.steps,
                                r.steps == 1 ? "" : "s", r.steps > 0 ? r.step_us / r.steps / 1e3 : 0.0,
                                r.peaks.device.empty() ? "the device" : r.peaks.device);
  out += fmt::format("  {:<30} {:>10} {:>8} {:>9} {:>18} {:>8}\n", "kernels", "ms/step", "share", "per step",
                     "achieved", "of peak");
  const double steps = std::max(r.steps, 1);
  for (const ProfileRow& row : r.rows) {
    const std::string achieved = row.rate > 0 ? fmt::format("{:.1f} {}", row.rate, row.unit) : "-";
    const std::string of_peak = row.of_peak > 0 ? fmt::format("{:.1f}%", 100 * row.of_peak) : "-";
    out += fmt::format("  {:<30} {:>10.3f} {:>7.1f}% {:>9.1f} {:>18} {:>8}\n", kernel_class_name(row.kind),
                       row.busy_us / steps / 1e3, 100 * row.share, static_cast<double>(row.launches) / steps,
                       achieved, of_peak);
  }
  out += fmt::format("  {:<30} {:>10.3f} {:>7.1f}%   (no kernel, copy or memset running)\n", "idle",
                     (r.step_us - r.busy_us) / steps / 1e3, 100 * r.idle_share);
  for (const IdleGap& g : r.top_idle)
    out += fmt::format("    idle: {:.3f} ms/step  after {} before {} ({:.1f} a step)\n", g.us / steps / 1e3, g.before,
                       g.after, static_cast<double>(g.count) / steps);
  for (const KernelTotal& k : r.top_kernels)
    out += fmt::format("    kernel: {:.3f} ms/step  {} ({:.1f} a step, {:.1f} us each)\n", k.us / steps / 1e3, k.name,
                       static_cast<double>(k.launches) / steps, k.us / static_cast<double>(k.launches));
  for (const auto& [name, us] : r.top_other)
    out += fmt::format("    other: {:.3f} ms/step  {}\n", us / steps / 1e3, name.substr(0, 110));
  if (r.samples > 0)
    out += fmt::format("  SM clock {:.0f} MHz mean ({:.0f}..{:.0f}{}), power {:.0f} W mean, {:.0f} W max{} ({} samples)\n",
                       r.sm_clock_mean, r.sm_clock_min, r.sm_clock_max,
                       r.peaks.max_sm_clock_mhz > 0 ? fmt::format("; the device's highest {:.0f}", r.peaks.max_sm_clock_mhz)
                                                    : "",
                       r.power_mean, r.power_max,
                       r.peaks.power_limit_w > 0 ? fmt::format(" of a {:.0f} W cap", r.peaks.power_limit_w) : "",
                       r.samples);
  else
    out += "  SM clock and power: no samples (NVML unavailable, or the steps were shorter than its interval)\n";
  if (r.peaks.bf16_tflops > 0 || r.peaks.memory_gbs > 0)
    out += fmt::format("  peaks: {:.0f} TFLOP/s bf16 dense, {:.0f} GB/s memory ({})\n", r.peaks.bf16_tflops,
                       r.peaks.memory_gbs, r.peaks.source);
  else
    out += "  peaks: not known for this device, so no share of peak is given\n";
  out += "  TFLOP/s are the model's FLOPs (the paper's count, per rank) over the kernels' time; shares are of the\n"
         "  steps' time, summed over streams, so kernels running side by side can add to more than 100%\n";
  return out;
}

std::vector<DeviceActivity> activities_in(const std::vector<DeviceActivity>& activities,
                                          const std::vector<ProfileWindow>& windows) {
  std::vector<DeviceActivity> inside;
  for (const DeviceActivity& a : activities)
    if (!clipped(a, windows).empty()) inside.push_back(a);
  return inside;
}

}  // namespace ptdp
