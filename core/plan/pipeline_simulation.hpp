#pragma once
// The planner's view of a pipeline step: the stock schedulers' ops for a shape (the first of
// sched-1f1b, sched-interleaved and sched-zb that serves it and splits the backward or not as
// asked, loaded as plugins the way a run loads them, each deciding itself which shapes it serves),
// lowered and verified like a run's, then replayed by the schedule simulator: with blocking
// groups, or, for a schedule that splits the backward, with transfers posted ahead (the model
// under which its weight gradients fill the bubble, stream_replay.hpp). Results are cached, since
// a search asks for the same shapes again and again; the lowered streams only for the last few
// shapes (a search asks for one shape's layouts one after another, and all of them would take
// hundreds of MB at a thousand GPUs).
//
// A long step is not replayed whole. With uniform op times the stock schedules settle into a
// steady state that repeats every p microbatches (the interleaved schedule's group; 1F1B's and
// ZB-H1's period of one divides it), so once m is past the warm-up the makespan grows by the same
// amount with each further p microbatches, and the peak activations no longer change. A step of
// more than kLongStepGroups groups of p is therefore simulated at kLongStepGroups - 1 and
// kLongStepGroups groups and its makespan extrapolated along that line: a search over 65,536 GPUs
// and a batch of millions then costs what a batch of a few groups costs, and the result is the
// whole replay's (PipelineSimulation.ALongStepIsExtrapolatedExactly holds it).
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "plugin/plugin_registry.hpp"
#include "ptdp/scheduler.hpp"
#include "schedule/instruction_stream.hpp"

namespace ptdp {

class PipelineSimulation {
 public:
  // `plugin_search_path`: folders searched before the default ones (ptdp-host's --path).
  explicit PipelineSimulation(const std::vector<std::string>& plugin_search_path = {});

  // Per stage, the most microbatch-chunks whose activations are alive at once (under a split
  // backward, until each microbatch's BackwardWeight).
  const std::vector<int>& peak_activations(const ScheduleShape& shape, bool split_backward = false);

  // The step's makespan in units of one microbatch's forward through a stage (t_f = 1), with a
  // whole backward of `backward_ratio`, of which `weight_ratio` is the weight gradients (read only
  // under a split backward), and `transfer_latency` (in the same units) per transfer.
  double makespan(const ScheduleShape& shape, bool split_backward, double backward_ratio, double weight_ratio,
                  double transfer_latency);

  // The first of the stock scheduler plugins that serves a shape (sched-1f1b, sched-interleaved,
  // then sched-zb) with a backward split into BackwardInput and BackwardWeight or not, as the
  // plugins themselves decide; throws ptdp::Error with their refusals when none does.
  const Scheduler& scheduler_for(const ScheduleShape& shape, bool split_backward = false);
  // Its plugin name, or nothing when no stock scheduler serves the shape that way.
  std::optional<std::string> scheduler_name(const ScheduleShape& shape, bool split_backward);

  // Steps longer than this many groups of p microbatches are extrapolated, not replayed whole.
  static constexpr int kLongStepGroups = 5;
  // The shape that is simulated for `shape`: itself, or its last kLongStepGroups groups.
  static ScheduleShape simulated_shape(const ScheduleShape& shape);

 private:
  using ShapeKey = std::tuple<int, int, int, bool>;  // p, v, m, split backward
  static constexpr size_t kRecentShapes = 16;
  static constexpr const char* kStockSchedulers[] = {"sched-1f1b", "sched-interleaved", "sched-zb"};

  // The index in kStockSchedulers of the one that serves the key, or -1 (and why not, in
  // `refusals`). Cached.
  int scheduler_index(const ShapeKey& key, std::string* refusals = nullptr);
  double replayed_makespan(const ScheduleShape& shape, bool split, double backward_ratio, double weight_ratio,
                           double latency);
  // The shape's verified instruction streams; records its peak activations on the way.
  std::shared_ptr<const std::vector<InstructionStream>> streams(const ScheduleShape& shape, bool split);

  PluginRegistry registry_;
  std::vector<std::shared_ptr<const Scheduler>> schedulers_;  // kStockSchedulers, loaded when first asked
  std::map<ShapeKey, int> served_by_;
  std::map<ShapeKey, std::vector<int>> peaks_;
  std::deque<std::pair<ShapeKey, std::shared_ptr<const std::vector<InstructionStream>>>> recent_streams_;
  std::map<std::tuple<int, int, int, bool, double, double, double>, double> makespans_;
};

}  // namespace ptdp
