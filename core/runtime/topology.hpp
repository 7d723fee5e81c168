#pragma once
// Where a rank sits in the (pipeline, data, tensor) grid, and the groups it belongs to.
// Megatron's default order tp-dp-pp: global = tp + t·(dp + d·pp), so TP ranks are neighbours
// and, with t = GPUs per server, a TP group never leaves a server.
#include <memory>
#include <string>

#include <ptdp/communicator.hpp>

namespace ptdp {

struct GridPosition {
  int pp = 0, dp = 0, tp = 0;
};

class Topology {
 public:
  Topology(int pipeline, int data, int tensor);
  int pipeline() const { return p_; }
  int data() const { return d_; }
  int tensor() const { return t_; }
  int world_size() const { return p_ * d_ * t_; }
  int rank_of(GridPosition pos) const { return pos.tp + t_ * (pos.dp + d_ * pos.pp); }
  GridPosition position_of(int rank) const;

 private:
  int p_, d_, t_;
};

// The communicators a rank trains with, split from the world communicator.
struct ParallelGroups {
  std::shared_ptr<Communicator> world;
  std::shared_ptr<Communicator> tensor;          // same (pp, dp)
  std::shared_ptr<Communicator> data;            // same (pp, tp)
  std::shared_ptr<Communicator> pipeline;        // same (dp, tp), ordered by stage
  std::shared_ptr<Communicator> model;           // same dp: one model replica (tp x pp)
  std::shared_ptr<Communicator> embedding;       // first and last stage of a pipeline (same dp,
                                                 // tp), for the tied word embedding; null elsewhere
                                                 // and when p == 1
};

// Collective over `world`: every rank must call it with the same topology.
ParallelGroups build_parallel_groups(const std::shared_ptr<Communicator>& world, const Topology& topology);
// The data-parallel group alone (ParallelGroups::data), also collective over `world`.
std::shared_ptr<Communicator> split_data_group(Communicator& world, const Topology& topology);
// The pipeline group alone (ParallelGroups::pipeline), also collective over `world`.
std::shared_ptr<Communicator> split_pipeline_group(Communicator& world, const Topology& topology);

}  // namespace ptdp
