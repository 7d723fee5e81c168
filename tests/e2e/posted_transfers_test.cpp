// The executor posts the pipeline's transfers on a lane of their own (pipeline_executor.hpp): on
// the CPU the computing thread never blocks in a group of sends and receives, the groups run on
// the "pipeline transfers" track, and under sched-zb a weight-gradient op (W) runs while a group
// is still in flight, which a blocking executor never lets it do.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host_run.hpp"
#include "trace_spans.hpp"

namespace ptdp::test {
namespace {

TEST(PostedTransfers, GroupsRunOnTheirLaneAndWeightGradientsRunBesideThem) {
  TinyGptWorkspace ws;
  const std::string trace = ws.dir() + "/trace.json";
  // Ops of a few milliseconds (h 128, s 64), long enough to outlast a group now and then.
  const HostRun run = ws.run({"run.steps=5", "model.hidden=128", "model.seq_len=64", "parallel.pipeline=4",
                              "plugins.scheduler=\"sched-zb\""},
                             4,
                             "--trace " + trace + " --trace-steps 4");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto ranks = spans_by_rank(trace);
  ASSERT_EQ(ranks.size(), 4u) << run.output;
  int beside_a_group = 0;
  for (const auto& [rank, spans] : ranks) {
    std::vector<Span> groups, weights;
    int compute_tid = -1;
    for (const Span& s : spans) {
      if (s.category == "forward") compute_tid = s.tid;
      if (s.name == "send/recv") groups.push_back(s);
      if (s.name.rfind("W", 0) == 0) weights.push_back(s);
    }
    ASSERT_FALSE(groups.empty()) << "rank " << rank;
    ASSERT_FALSE(weights.empty()) << "rank " << rank;
    for (const Span& g : groups)
      EXPECT_NE(g.tid, compute_tid) << "rank " << rank << ": a group of sends and receives ran on the computing thread";
    for (const Span& w : weights)
      for (const Span& g : groups)
        if (w.start < g.end && g.start < w.end) {
          ++beside_a_group;
          break;
        }
  }
  EXPECT_GT(beside_a_group, 0) << "no W of four steps ran while a group of transfers was in flight:\n" << run.output;
}

}  // namespace
}  // namespace ptdp::test
