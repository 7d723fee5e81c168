#include "runtime/topology.hpp"

#include <fmt/format.h>

namespace ptdp {

Topology::Topology(int pipeline, int data, int tensor) : p_(pipeline), d_(data), t_(tensor) {
  PTDP_CHECK(p_ >= 1 && d_ >= 1 && t_ >= 1, "topology sizes must be positive");
}

GridPosition Topology::position_of(int rank) const {
  PTDP_CHECK(rank >= 0 && rank < world_size(), "rank outside the topology");
  GridPosition pos;
  pos.tp = rank % t_;
  pos.dp = (rank / t_) % d_;
  pos.pp = rank / (t_ * d_);
  return pos;
}

ParallelGroups build_parallel_groups(const std::shared_ptr<Communicator>& world, const Topology& topology) {
  const GridPosition me = topology.position_of(world->rank());
  const int t = topology.tensor(), d = topology.data(), p = topology.pipeline();
  ParallelGroups g;
  g.world = world;
  // Colors enumerate the coordinates the members share; keys order members inside a group.
  g.tensor = world->split(me.pp * d + me.dp, me.tp, fmt::format("tp[pp={},dp={}]", me.pp, me.dp));
  g.data = split_data_group(*world, topology);
  g.pipeline = split_pipeline_group(*world, topology);
  g.model = world->split(me.dp, me.pp * t + me.tp, fmt::format("model[dp={}]", me.dp));
  const bool on_edge = p > 1 && (me.pp == 0 || me.pp == p - 1);
  // split is collective over the world: ranks outside the embedding group pass color -1's
  // stand-in (a color no member uses) and drop the result.
  const int color = on_edge ? me.dp * t + me.tp : d * t + world->rank();
  auto embedding = world->split(color, me.pp, fmt::format("embedding[dp={},tp={}]", me.dp, me.tp));
  if (on_edge) g.embedding = embedding;
  return g;
}

std::shared_ptr<Communicator> split_data_group(Communicator& world, const Topology& topology) {
  const GridPosition me = topology.position_of(world.rank());
  return world.split(me.pp * topology.tensor() + me.tp, me.dp, fmt::format("dp[pp={},tp={}]", me.pp, me.tp));
}

std::shared_ptr<Communicator> split_pipeline_group(Communicator& world, const Topology& topology) {
  const GridPosition me = topology.position_of(world.rank());
  return world.split(me.dp * topology.tensor() + me.tp, me.pp, fmt::format("pp[dp={},tp={}]", me.dp, me.tp));
}

}  // namespace ptdp
