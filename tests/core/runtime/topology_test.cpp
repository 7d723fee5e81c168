#include <gtest/gtest.h>

#include <set>

#include "runtime/topology.hpp"

namespace ptdp {
namespace {

TEST(Topology, RankOrderIsTensorThenDataThenPipeline) {
  Topology topo(/*pipeline=*/2, /*data=*/3, /*tensor=*/4);
  EXPECT_EQ(topo.world_size(), 24);
  EXPECT_EQ(topo.rank_of({0, 0, 1}), 1);   // TP neighbours are adjacent ranks
  EXPECT_EQ(topo.rank_of({0, 1, 0}), 4);   // next DP replica after t ranks
  EXPECT_EQ(topo.rank_of({1, 0, 0}), 12);  // next stage after t*d ranks
  std::set<int> seen;
  for (int r = 0; r < topo.world_size(); ++r) {
    const GridPosition pos = topo.position_of(r);
    EXPECT_EQ(topo.rank_of(pos), r);
    seen.insert(r);
  }
  EXPECT_EQ(seen.size(), 24u);
}

TEST(Topology, RejectsOutOfRange) {
  Topology topo(2, 1, 2);
  EXPECT_THROW(topo.position_of(4), Error);
  EXPECT_THROW(Topology(0, 1, 1), Error);
}

}  // namespace
}  // namespace ptdp
