#include "launch/rank_environment.hpp"

#include <gtest/gtest.h>

#include <map>

#include "ptdp/error.hpp"

namespace ptdp {
namespace {

std::optional<RankEnvironment> detect(const std::map<std::string, std::string>& vars) {
  return detect_rank_environment([&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    detect(vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RankEnvironment, NoLauncherMeansSingleProcess) {
  EXPECT_FALSE(detect({}).has_value());
  EXPECT_FALSE(detect({{"HOME", "/root"}, {"RANK", ""}}).has_value());
}

TEST(RankEnvironment, OwnLauncher) {
  auto env = detect({{"PTDP_RANK", "3"}, {"PTDP_WORLD_SIZE", "4"}, {"PTDP_LOCAL_RANK", "3"},
                     {"PTDP_LOCAL_WORLD_SIZE", "4"}, {"PTDP_MASTER_ADDR", "127.0.0.1"},
                     {"PTDP_MASTER_PORT", "29400"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "ptdp");
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 3);
  EXPECT_EQ(env->local_world_size, 4);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 29400);
}

TEST(RankEnvironment, OwnLauncherWinsOverOthers) {
  auto env = detect({{"PTDP_RANK", "1"}, {"PTDP_WORLD_SIZE", "2"}, {"PTDP_MASTER_ADDR", "a"},
                     {"PTDP_MASTER_PORT", "1000"}, {"RANK", "5"}, {"WORLD_SIZE", "8"},
                     {"MASTER_ADDR", "b"}, {"MASTER_PORT", "2000"}, {"OMPI_COMM_WORLD_RANK", "7"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "ptdp");
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->master_addr, "a");
}

TEST(RankEnvironment, Torchrun) {
  auto env = detect({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
                     {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29500"}, {"SLURM_PROCID", "0"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "torchrun");
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 4);
  EXPECT_EQ(env->master_addr, "node7");
  EXPECT_EQ(env->master_port, 29501) << "torchrun's agent owns MASTER_PORT itself";
}

TEST(RankEnvironment, TorchrunOnOneNodeKeepsTheStoreOnLoopback) {
  // torchrun --standalone sets MASTER_ADDR to the host's name, which other machines may reach.
  std::map<std::string, std::string> vars = {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                                             {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "node7"},
                                             {"MASTER_PORT", "29500"}};
  EXPECT_EQ(detect(vars)->master_addr, "127.0.0.1");
  vars["PTDP_MASTER_ADDR"] = "10.1.2.3";
  EXPECT_EQ(detect(vars)->master_addr, "10.1.2.3") << "ptdp's own variable still wins";
}

TEST(RankEnvironment, TorchrunNeedsMasterAddress) {
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}).find("MASTER_ADDR"),
            std::string::npos);
}

TEST(RankEnvironment, OpenMpiOnOneNodeNeedsNothingElse) {
  std::map<std::string, std::string> vars = {
      {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"OMPI_MCA_ess_base_jobid", "3131047937"}};
  auto env = detect(vars);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "mpirun");
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 2);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_GE(env->master_port, 20000);
  EXPECT_LT(env->master_port, 32000);

  vars["OMPI_COMM_WORLD_RANK"] = "0";
  auto other_rank = detect(vars);
  EXPECT_EQ(other_rank->master_port, env->master_port) << "every rank derives the same port";
  vars["OMPI_MCA_ess_base_jobid"] = "3131047938";
  EXPECT_NE(detect(vars)->master_port, env->master_port) << "another job, another port";
}

TEST(RankEnvironment, OpenMpiAcrossNodesSaysWhatToSet) {
  std::map<std::string, std::string> vars = {
      {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"PMIX_NAMESPACE", "prterun-node1-1234@1"}};
  EXPECT_NE(error_of(vars).find("set MASTER_ADDR"), std::string::npos) << error_of(vars);
  vars["MASTER_ADDR"] = "node1";
  vars["MASTER_PORT"] = "29600";
  auto env = detect(vars);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->master_addr, "node1");
  EXPECT_EQ(env->master_port, 29600);
  EXPECT_EQ(env->local_world_size, 4);
}

TEST(RankEnvironment, OpenMpiWithoutJobIdNeedsPort) {
  EXPECT_NE(error_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}})
                .find("MASTER_PORT"),
            std::string::npos);
}

TEST(RankEnvironment, Slurm) {
  std::map<std::string, std::string> vars = {
      {"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "10"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"},
      {"SLURM_STEP_TASKS_PER_NODE", "4(x2),2"}, {"SLURM_STEP_NODELIST", "gpu[03-05],cpu1"},
      {"SLURM_JOB_ID", "81723"}, {"SLURM_STEP_ID", "0"}};
  auto env = detect(vars);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "srun");
  EXPECT_EQ(env->rank, 9);
  EXPECT_EQ(env->world_size, 10);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->master_addr, "gpu03");
  EXPECT_GE(env->master_port, 20000);

  vars["SLURM_STEP_ID"] = "1";
  EXPECT_NE(detect(vars)->master_port, env->master_port) << "each job step gets its own store";
  vars["MASTER_ADDR"] = "10.1.2.3";
  vars["MASTER_PORT"] = "4000";
  EXPECT_EQ(detect(vars)->master_addr, "10.1.2.3");
  EXPECT_EQ(detect(vars)->master_port, 4000);
}

TEST(RankEnvironment, SlurmOnOneNodeKeepsTheStoreOnLoopback) {
  // srun -n 4 on one node: no other machine takes part, so nothing should be able to reach the store.
  std::map<std::string, std::string> vars = {
      {"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "2"}, {"SLURM_NODEID", "0"},
      {"SLURM_STEP_TASKS_PER_NODE", "4"}, {"SLURM_STEP_NODELIST", "node7"}, {"SLURM_JOB_ID", "5"}};
  EXPECT_EQ(detect(vars)->master_addr, "127.0.0.1");
  vars["MASTER_ADDR"] = "10.1.2.3";
  EXPECT_EQ(detect(vars)->master_addr, "10.1.2.3") << "an explicit address still wins";
}

TEST(RankEnvironment, SlurmNodeIdOutsideTasksPerNode) {
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODEID", "3"},
                      {"SLURM_STEP_TASKS_PER_NODE", "2"}, {"SLURM_STEP_NODELIST", "a"},
                      {"SLURM_JOB_ID", "1"}})
                .find("SLURM_NODEID=3"),
            std::string::npos);
}

TEST(RankEnvironment, MalformedVariablesAreNamed) {
  EXPECT_NE(error_of({{"RANK", "one"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}})
                .find("RANK='one' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of({{"PTDP_RANK", "4"}, {"PTDP_WORLD_SIZE", "4"}, {"PTDP_MASTER_ADDR", "a"},
                      {"PTDP_MASTER_PORT", "1"}})
                .find("rank 4 outside world size 4"),
            std::string::npos);
  EXPECT_NE(error_of({{"PTDP_RANK", "0"}, {"PTDP_WORLD_SIZE", "1"}, {"PTDP_MASTER_ADDR", "a"},
                      {"PTDP_MASTER_PORT", "70000"}})
                .find("master port 70000"),
            std::string::npos);
  EXPECT_NE(error_of({{"PTDP_RANK", "0"}, {"PTDP_MASTER_ADDR", "a"}, {"PTDP_MASTER_PORT", "1"}})
                .find("PTDP_WORLD_SIZE"),
            std::string::npos);
}

TEST(SlurmNotation, FirstHost) {
  EXPECT_EQ(first_slurm_host("node7"), "node7");
  EXPECT_EQ(first_slurm_host("a1,b2"), "a1");
  EXPECT_EQ(first_slurm_host("node[001-004,007]"), "node001");
  EXPECT_EQ(first_slurm_host("node[7,9]"), "node7");
  EXPECT_EQ(first_slurm_host("rack1-node[12-13],x"), "rack1-node12");
  EXPECT_THROW(first_slurm_host("node[1-2"), Error);
}

TEST(SlurmNotation, TasksPerNode) {
  EXPECT_EQ(expand_slurm_tasks_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(expand_slurm_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_THROW(expand_slurm_tasks_per_node("2(3)"), Error);
  EXPECT_THROW(expand_slurm_tasks_per_node("x"), Error);
  EXPECT_THROW(expand_slurm_tasks_per_node(""), Error);
}

}  // namespace
}  // namespace ptdp
