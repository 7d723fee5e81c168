// A rank's device records in the trace: one named track per stream beside the rank's ops, times
// moved to the rank's origin, kernels named by function and filed under their class; and the
// records' trip through the rendezvous store as JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "profile/device_tracks.hpp"

namespace ptdp {
namespace {

std::vector<DeviceActivity> records() {
  DeviceActivity ln;
  ln.name = "void ptdp::fused::(anonymous namespace)::layer_norm_forward_kernel<8>(float*)";
  ln.stream = 13;
  ln.start_us = 10100;
  ln.duration_us = 25;
  DeviceActivity copy;
  copy.kind = DeviceActivity::Kind::Copy;
  copy.name = "copy HtoD";
  copy.stream = 7;
  copy.start_us = 10050;
  copy.duration_us = 4;
  copy.bytes = 4096;
  DeviceActivity gemm = ln;
  gemm.name = "nvjet_tst_128x256_64x4";
  gemm.start_us = 10200;
  return {ln, copy, gemm};
}

TEST(DeviceTracks, OneTrackPerStreamShiftedToTheRanksOrigin) {
  ChromeTrace trace;
  add_device_tracks(trace, 3, records(), 10000, 1);
  const auto json = nlohmann::json::parse(trace.to_json());
  std::map<int, std::string> threads;
  std::vector<nlohmann::json> spans;
  for (const auto& e : json.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threads[e.at("tid").get<int>()] = e.at("args").at("name");
    if (e.at("ph") == "X") spans.push_back(e);
  }
  // Streams in id order: 7 first.
  EXPECT_EQ(threads, (std::map<int, std::string>{{1, "GPU stream 7"}, {2, "GPU stream 13"}}));
  ASSERT_EQ(spans.size(), 3u);
  for (const auto& s : spans) EXPECT_EQ(s.at("pid"), 3);
  EXPECT_EQ(spans[0].at("name"), "layer_norm_forward_kernel");
  EXPECT_EQ(spans[0].at("cat"), "LayerNorm");
  EXPECT_EQ(spans[0].at("tid"), 2);
  EXPECT_DOUBLE_EQ(spans[0].at("ts").get<double>(), 100);
  EXPECT_DOUBLE_EQ(spans[0].at("dur").get<double>(), 25);
  EXPECT_EQ(spans[1].at("name"), "copy HtoD");
  EXPECT_EQ(spans[1].at("tid"), 1);
  EXPECT_EQ(spans[1].at("args").at("bytes"), 4096);
  EXPECT_EQ(spans[2].at("cat"), "GEMM");
}

TEST(DeviceTracks, RecordsSurviveTheirTripAsJson) {
  const std::vector<DeviceActivity> sent = records();
  const std::vector<DeviceActivity> got = device_activities_from_json(device_activities_to_json(sent));
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got[i].kind, sent[i].kind);
    EXPECT_EQ(got[i].name, sent[i].name);
    EXPECT_EQ(got[i].stream, sent[i].stream);
    EXPECT_EQ(got[i].start_us, sent[i].start_us);
    EXPECT_EQ(got[i].duration_us, sent[i].duration_us);
    EXPECT_EQ(got[i].bytes, sent[i].bytes);
  }
}

}  // namespace
}  // namespace ptdp
