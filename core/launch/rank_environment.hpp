#pragma once
// Where this process sits in the job, from the environment a launcher left it:
//   ptdp's own launcher: PTDP_RANK, PTDP_WORLD_SIZE, PTDP_LOCAL_RANK, PTDP_LOCAL_WORLD_SIZE,
//                        PTDP_MASTER_ADDR, PTDP_MASTER_PORT
//   torchrun:            RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//                        (the store listens on MASTER_PORT + 1: torchrun's agent owns MASTER_PORT)
//   mpirun (Open MPI):   OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}
//   srun (Slurm):        SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID,
//                        SLURM_STEP_TASKS_PER_NODE, SLURM_STEP_NODELIST
// Checked in this order; the first launcher whose rank variable is set wins.
// When every rank is on this node (local world = world) the store stays on 127.0.0.1 for every
// launcher, torchrun's MASTER_ADDR notwithstanding; PTDP_MASTER_ADDR (and, for mpirun and srun,
// MASTER_ADDR) still override it.
// mpirun and srun carry no rendezvous address. MASTER_ADDR / MASTER_PORT are used when set;
// otherwise the address is the first host of SLURM_STEP_NODELIST (srun puts rank 0 there), and
// the port is derived from the job id
// (SLURM_JOB_ID.SLURM_STEP_ID, or Open MPI's OMPI_MCA_ess_base_jobid / PMIX_NAMESPACE) so all
// ranks agree without talking. A multi-node mpirun needs MASTER_ADDR (e.g. -x MASTER_ADDR=node1).
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ptdp {

struct RankEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;
  int master_port = 0;
  std::string launcher;  // "ptdp", "torchrun", "mpirun", "srun"
};

using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Empty when no launcher's variables are present (a plain single process). Throws ptdp::Error
// naming the variable when one is malformed or inconsistent, or saying what to set when the
// rendezvous address cannot be found.
std::optional<RankEnvironment> detect_rank_environment();
std::optional<RankEnvironment> detect_rank_environment(const EnvironmentLookup& lookup);

// "node[01-04,07],gpu3" -> "node01": the first host of a Slurm host list.
std::string first_slurm_host(const std::string& nodelist);
// "2(x3),1" -> {2, 2, 2, 1}: Slurm's tasks-per-node notation, one entry per node.
std::vector<int> expand_slurm_tasks_per_node(const std::string& spec);

}  // namespace ptdp
