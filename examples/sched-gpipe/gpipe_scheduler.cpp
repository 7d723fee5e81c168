// GPipe: every microbatch's forward, then every backward in reverse order. Simple, and it keeps
// all m microbatches' activations alive at once (1F1B keeps at most p - stage).
#include <ptdp/sdk.hpp>

namespace {

class GPipeScheduler final : public ptdp::Scheduler {
 public:
  explicit GPipeScheduler(const ptdp::PluginContext&) {}

  std::vector<ptdp::ComputeOp> stage_ops(const ptdp::ScheduleShape& shape, int) const override {
    if (shape.chunks != 1)
      throw ptdp::Error("sched-gpipe serves one model chunk per stage (got " +
                        std::to_string(shape.chunks) + "); set parallel.virtual_stages = 1");
    std::vector<ptdp::ComputeOp> ops;
    for (int mb = 0; mb < shape.microbatches; ++mb) ops.push_back({ptdp::OpKind::Forward, mb, 0});
    for (int mb = shape.microbatches - 1; mb >= 0; --mb) ops.push_back({ptdp::OpKind::Backward, mb, 0});
    return ops;
  }
};

}  // namespace

PTDP_PLUGIN_NO_CONFIG(ptdp::PluginKind::Scheduler, ptdp::Scheduler, GPipeScheduler, "sched-gpipe", "1.0.0")
