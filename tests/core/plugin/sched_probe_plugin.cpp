// A well-formed scheduler whose behaviour shows the configuration it received: it emits `depth`
// forward ops per stage and logs every value it read (and once more when destroyed), so tests
// see what crossed the boundary and how long the host kept it alive.
#include <ptdp/sdk.hpp>

namespace {

class ProbeScheduler final : public ptdp::Scheduler {
 public:
  explicit ProbeScheduler(const ptdp::PluginContext& context)
      : context_(context), depth_(static_cast<int>(context.config->get_int("depth"))) {
    const ptdp::ConfigView& config = *context.config;
    context.write_log(ptdp::LogLevel::Info,
                      "depth=" + std::to_string(depth_) + " ratio=" +
                          std::to_string(config.get_float("ratio")) + " mode=" +
                          config.get_string("mode") + " verbose=" +
                          (config.get_bool("verbose") ? "true" : "false") + " label=" +
                          config.get_string("label") + " rank=" + std::to_string(context.rank) +
                          "/" + std::to_string(context.world_size) + " local=" + std::to_string(context.local_rank) + "/" +
                          std::to_string(context.local_world_size) + " host=" + context.host);
  }

  // Reads its configuration once more: the host keeps the context and view alive until here.
  ~ProbeScheduler() override {
    context_.write_log(ptdp::LogLevel::Info, "released label=" + context_.config->get_string("label"));
  }

  std::vector<ptdp::ComputeOp> stage_ops(const ptdp::ScheduleShape&, int) const override {
    std::vector<ptdp::ComputeOp> ops;
    for (int mb = 0; mb < depth_; ++mb) ops.push_back({ptdp::OpKind::Forward, mb, 0});
    return ops;
  }

 private:
  const ptdp::PluginContext& context_;
  int depth_;
};

const ptdp::ConfigKeySpec kSchema[] = {
    {"depth", ptdp::ConfigType::Int, "2", 1, 64, nullptr, "forward ops per stage"},
    {"ratio", ptdp::ConfigType::Float, "0.5", 0.0, 1.0, nullptr, "a fraction"},
    {"mode", ptdp::ConfigType::String, "\"flash\"", 0, 0, "flash|naive", "how to run"},
    {"verbose", ptdp::ConfigType::Bool, "false", 0, 0, nullptr, "say more"},
    {"label", ptdp::ConfigType::String, nullptr, 0, 0, nullptr, "a name for the run"},
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::Scheduler, ptdp::Scheduler, ProbeScheduler, "sched-probe", "2.1.0",
            kSchema)
