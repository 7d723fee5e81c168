// SIGTERM or SIGUSR1 to a job (what Slurm sends before it kills one) finishes the step, saves a
// checkpoint and exits with 75, and a resume continues from that step: nothing trained is lost.
#include <gtest/gtest.h>
#include <signal.h>

#include "host_run.hpp"
#include "runtime/stop_signal.hpp"

namespace ptdp::test {
namespace {

using namespace std::chrono_literals;

void stop_saves_and_resume_continues(int nproc, int signal, const std::vector<std::string>& layout) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt", metrics = ws.dir() + "/stopped.jsonl";
  std::vector<std::string> sets = layout;
  sets.insert(sets.end(), {"run.steps=100000", "optimizer.decay_steps=100000", "checkpoint.dir=\"" + dir + "\""});
  BackgroundRun job(ws, sets, nproc, metrics);
  ASSERT_TRUE(job.wait_for_steps(2, 60s)) << "the job did not train:\n" << job.output();
  ASSERT_EQ(::kill(job.pid(), signal), 0);
  const std::optional<int> code = job.wait(60s);
  ASSERT_TRUE(code.has_value()) << "the job did not stop within 60 s of the signal:\n" << job.output();
  EXPECT_EQ(*code, 75) << job.output();
  const int trained = count_steps(metrics);
  const std::string step = std::to_string(trained);
  EXPECT_NE(job.output().find("stopped by " + signal_name(signal) + " after step " + step + "/100000"),
            std::string::npos)
      << job.output();
  EXPECT_EQ(folder_names(dir), std::vector<std::string>{"step-" + std::string(8 - step.size(), '0') + step})
      << "the step the job stopped after is its checkpoint";

  std::vector<std::string> resume = layout;
  resume.insert(resume.end(), {"run.steps=" + std::to_string(trained + 2), "optimizer.decay_steps=100000",
                               "checkpoint.dir=\"" + dir + "\""});
  const HostRun resumed = ws.run(resume, nproc);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + dir + " at step " + step), std::string::npos) << resumed.output;
  EXPECT_EQ(resumed.losses.size(), 2u) << resumed.output;
}

TEST(StopSignalRun, SigtermToTheLauncherSavesEveryRankAndExits75) {
  stop_saves_and_resume_continues(2, SIGTERM, {"parallel.pipeline=2"});
}

TEST(StopSignalRun, SigusrToASingleProcessSavesAndExits75) { stop_saves_and_resume_continues(1, SIGUSR1, {}); }

}  // namespace
}  // namespace ptdp::test
