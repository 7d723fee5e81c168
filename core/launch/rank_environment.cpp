#include "launch/rank_environment.hpp"

#include <charconv>
#include <cstdlib>
#include <vector>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// Ports derived from a job id fall here, away from the usual fixed services and the ephemeral range.
constexpr int kDerivedPortBase = 20000;
constexpr int kDerivedPortSpan = 12000;

class Variables {
 public:
  explicit Variables(const EnvironmentLookup& lookup) : lookup_(lookup) {}

  std::optional<std::string> text(const std::string& name) const {
    std::optional<std::string> v = lookup_(name);
    if (v && v->empty()) return std::nullopt;
    return v;
  }

  std::optional<int> integer(const std::string& name) const {
    std::optional<std::string> v = text(name);
    if (!v) return std::nullopt;
    int value = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), value);
    if (ec != std::errc() || end != v->data() + v->size())
      throw Error("launch: " + name + "='" + *v + "' is not an integer");
    return value;
  }

  int required(const std::string& name, const std::string& launcher) const {
    std::optional<int> v = integer(name);
    if (!v) throw Error("launch: " + launcher + " environment without " + name);
    return *v;
  }

 private:
  const EnvironmentLookup& lookup_;
};

int derived_port(const std::string& job_id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: every rank computes the same port
  for (char c : job_id) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return kDerivedPortBase + static_cast<int>(h % kDerivedPortSpan);
}

void check(const RankEnvironment& env) {
  const std::string who = "launch (" + env.launcher + "): ";
  if (env.world_size < 1) throw Error(who + "world size " + std::to_string(env.world_size) + " < 1");
  if (env.rank < 0 || env.rank >= env.world_size)
    throw Error(who + "rank " + std::to_string(env.rank) + " outside world size " +
                std::to_string(env.world_size));
  if (env.local_world_size < 1 || env.local_rank < 0 || env.local_rank >= env.local_world_size)
    throw Error(who + "local rank " + std::to_string(env.local_rank) + " outside local world size " +
                std::to_string(env.local_world_size));
  if (env.master_port < 1 || env.master_port > 65535)
    throw Error(who + "master port " + std::to_string(env.master_port) + " outside 1..65535");
}

// Explicit MASTER_ADDR / MASTER_PORT (ours or torch's names) override what a launcher implies.
void apply_master_overrides(const Variables& vars, RankEnvironment& env) {
  if (auto addr = vars.text("PTDP_MASTER_ADDR")) env.master_addr = *addr;
  else if (auto addr2 = vars.text("MASTER_ADDR")) env.master_addr = *addr2;
  if (auto port = vars.integer("PTDP_MASTER_PORT")) env.master_port = *port;
  else if (auto port2 = vars.integer("MASTER_PORT")) env.master_port = *port2;
}

std::optional<RankEnvironment> from_ptdp(const Variables& vars) {
  if (!vars.text("PTDP_RANK")) return std::nullopt;
  RankEnvironment env;
  env.launcher = "ptdp";
  env.rank = vars.required("PTDP_RANK", "ptdp");
  env.world_size = vars.required("PTDP_WORLD_SIZE", "ptdp");
  env.local_rank = vars.integer("PTDP_LOCAL_RANK").value_or(env.rank);
  env.local_world_size = vars.integer("PTDP_LOCAL_WORLD_SIZE").value_or(env.world_size);
  if (!vars.text("PTDP_MASTER_ADDR")) throw Error("launch: ptdp environment without PTDP_MASTER_ADDR");
  env.master_addr = *vars.text("PTDP_MASTER_ADDR");
  env.master_port = vars.required("PTDP_MASTER_PORT", "ptdp");
  return env;
}

std::optional<RankEnvironment> from_torchrun(const Variables& vars) {
  if (!vars.text("RANK") || !vars.text("WORLD_SIZE")) return std::nullopt;
  RankEnvironment env;
  env.launcher = "torchrun";
  env.rank = vars.required("RANK", "torchrun");
  env.world_size = vars.required("WORLD_SIZE", "torchrun");
  env.local_rank = vars.integer("LOCAL_RANK").value_or(0);
  env.local_world_size = vars.integer("LOCAL_WORLD_SIZE").value_or(env.world_size);
  std::optional<std::string> addr = vars.text("MASTER_ADDR");
  if (!addr) throw Error("launch: torchrun environment without MASTER_ADDR");
  env.master_addr = *addr;
  // torchrun always sets MASTER_ADDR (the host's name under --standalone). With every rank on
  // this node the store stays on loopback, where no other machine reaches it and no secret is
  // needed; PTDP_MASTER_ADDR still says otherwise.
  if (env.local_world_size == env.world_size) env.master_addr = "127.0.0.1";
  if (auto own = vars.text("PTDP_MASTER_ADDR")) env.master_addr = *own;
  env.master_port = vars.required("MASTER_PORT", "torchrun") + 1;
  return env;
}

std::optional<RankEnvironment> from_openmpi(const Variables& vars) {
  if (!vars.text("OMPI_COMM_WORLD_RANK")) return std::nullopt;
  RankEnvironment env;
  env.launcher = "mpirun";
  env.rank = vars.required("OMPI_COMM_WORLD_RANK", "mpirun");
  env.world_size = vars.required("OMPI_COMM_WORLD_SIZE", "mpirun");
  env.local_rank = vars.integer("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0);
  env.local_world_size = vars.integer("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(1);
  if (env.local_world_size == env.world_size) env.master_addr = "127.0.0.1";
  std::optional<std::string> job = vars.text("OMPI_MCA_ess_base_jobid");
  if (!job) job = vars.text("PMIX_NAMESPACE");
  if (job) env.master_port = derived_port(*job);
  apply_master_overrides(vars, env);
  if (env.master_addr.empty())
    throw Error("launch: mpirun across nodes gives no rendezvous address: set MASTER_ADDR to rank 0's "
                "host (mpirun -x MASTER_ADDR=<host> -x MASTER_PORT=<port>)");
  if (env.master_port == 0)
    throw Error("launch: mpirun gives no job id to derive a port from: set MASTER_PORT "
                "(mpirun -x MASTER_PORT=<port>)");
  return env;
}

std::optional<RankEnvironment> from_slurm(const Variables& vars) {
  if (!vars.text("SLURM_PROCID")) return std::nullopt;
  RankEnvironment env;
  env.launcher = "srun";
  env.rank = vars.required("SLURM_PROCID", "srun");
  env.world_size = vars.required("SLURM_NTASKS", "srun");
  env.local_rank = vars.integer("SLURM_LOCALID").value_or(0);
  env.local_world_size = 1;
  std::optional<std::string> per_node = vars.text("SLURM_STEP_TASKS_PER_NODE");
  if (!per_node) per_node = vars.text("SLURM_TASKS_PER_NODE");
  if (per_node) {
    std::vector<int> counts = expand_slurm_tasks_per_node(*per_node);
    const int node = vars.integer("SLURM_NODEID").value_or(0);
    if (node < 0 || node >= static_cast<int>(counts.size()))
      throw Error("launch: SLURM_NODEID=" + std::to_string(node) + " has no entry in tasks per node '" +
                  *per_node + "'");
    env.local_world_size = counts[static_cast<size_t>(node)];
  }
  // Every rank on this node: the store stays on loopback (as for mpirun), where no other machine
  // can reach it and no secret is needed.
  if (env.local_world_size == env.world_size) {
    env.master_addr = "127.0.0.1";
  } else {
    std::optional<std::string> nodes = vars.text("SLURM_STEP_NODELIST");
    if (!nodes) nodes = vars.text("SLURM_JOB_NODELIST");
    if (nodes) env.master_addr = first_slurm_host(*nodes);
  }
  if (auto job = vars.text("SLURM_JOB_ID"))
    env.master_port = derived_port(*job + "." + vars.text("SLURM_STEP_ID").value_or("0"));
  apply_master_overrides(vars, env);
  if (env.master_addr.empty())
    throw Error("launch: srun without SLURM_STEP_NODELIST: set MASTER_ADDR to rank 0's host");
  if (env.master_port == 0) throw Error("launch: srun without SLURM_JOB_ID: set MASTER_PORT");
  return env;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  size_t end = nodelist.find_first_of(",[");
  if (end == std::string::npos || nodelist[end] == ',') return nodelist.substr(0, end);
  // prefix[range,...]: the first number of the first range, keeping its zero padding.
  const size_t close = nodelist.find(']', end);
  if (close == std::string::npos) throw Error("launch: malformed Slurm node list '" + nodelist + "'");
  const std::string inside = nodelist.substr(end + 1, close - end - 1);
  const size_t first_end = inside.find_first_of(",-");
  return nodelist.substr(0, end) + inside.substr(0, first_end);
}

std::vector<int> expand_slurm_tasks_per_node(const std::string& spec) {
  std::vector<int> counts;
  size_t pos = 0;
  auto fail = [&] { return Error("launch: malformed Slurm tasks per node '" + spec + "'"); };
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    int count = 0, repeat = 1;
    const char* p = item.data();
    const char* last = item.data() + item.size();
    auto [after, ec] = std::from_chars(p, last, count);
    if (ec != std::errc()) throw fail();
    if (after != last) {
      // "N(xR)"
      if (last - after < 4 || after[0] != '(' || after[1] != 'x' || last[-1] != ')') throw fail();
      auto [r_end, r_ec] = std::from_chars(after + 2, last - 1, repeat);
      if (r_ec != std::errc() || r_end != last - 1 || repeat < 1) throw fail();
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    pos = end + 1;
  }
  if (counts.empty()) throw fail();
  return counts;
}

std::optional<RankEnvironment> detect_rank_environment(const EnvironmentLookup& lookup) {
  Variables vars(lookup);
  for (auto detect : {from_ptdp, from_torchrun, from_openmpi, from_slurm}) {
    std::optional<RankEnvironment> env = detect(vars);
    if (env) {
      check(*env);
      return env;
    }
  }
  return std::nullopt;
}

std::optional<RankEnvironment> detect_rank_environment() {
  return detect_rank_environment([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace ptdp
