// ptdp-host ab end to end on the CPU: verdicts on arms known to be alike or not, loss parity of
// arms that must and must not train the same model, the report files, a launcher template that
// starts the ranks itself, and every refusal before anything runs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <nlohmann/json.hpp>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;

class AbCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { workspace_ = new TinyGptWorkspace(); }
  static void TearDownTestSuite() { delete workspace_; }

  // `ptdp-host ab` on the tiny manifest, into a fresh folder under the workspace.
  static CommandResult ab(const std::string& args, std::string* out_dir = nullptr) {
    static int counter = 0;
    const std::string out = workspace_->dir() + "/ab-" + std::to_string(counter++);
    if (out_dir) *out_dir = out;
    return run_shell(std::string(PTDP_TEST_HOST) + " ab " + workspace_->manifest() + " " + args + " --out " + out);
  }
  static nlohmann::json report(const std::string& out) {
    std::ifstream in(out + "/report.json");
    return nlohmann::json::parse(in);
  }
  static TinyGptWorkspace* workspace_;
};
TinyGptWorkspace* AbCommand::workspace_ = nullptr;

TEST_F(AbCommand, IdenticalArmsShowNoDifferenceAndTheReportFilesParse) {
  // At the default 95% two identical arms are called different about one time in twenty (as
  // a 5% test must be); at 99.9% this test is expected to fail about once in a thousand runs.
  std::string out;
  const CommandResult run = ab("--arm a --arm b --rounds 5 --steps 12 --warmup 2 --confidence 0.999 --alpha 0.001", &out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = report(out);
  ASSERT_EQ(r["comparisons"].size(), 1u);
  const auto& c = r["comparisons"][0];
  EXPECT_EQ(c["verdict"], "no significant difference") << c.dump(2);
  EXPECT_LE(c["ci_low"].get<double>(), 1.0);
  EXPECT_GE(c["ci_high"].get<double>(), 1.0);
  EXPECT_TRUE(c["losses_equivalent"]);
  EXPECT_EQ(c["loss_max_rel_diff"], 0.0) << "the same settings trained differently";
  ASSERT_EQ(r["arms"].size(), 2u);
  for (const auto& arm : r["arms"]) {
    EXPECT_GT(arm["median_step_s"].get<double>(), 0);
    EXPECT_GT(arm["tokens_per_s"].get<double>(), 0);
    EXPECT_GT(arm["tflops_per_gpu"].get<double>(), 0);
    EXPECT_GT(arm["peak_memory_gib"].get<double>(), 0);
    ASSERT_EQ(arm["rounds"].size(), 5u);
    for (const auto& round : arm["rounds"]) {
      EXPECT_EQ(round["step_time_s"].size(), 10u);  // 12 steps, 2 of them warm-up
      EXPECT_EQ(round["loss"].size(), 12u);
    }
    EXPECT_EQ(arm["header"]["record"], "header");
    EXPECT_EQ(arm["header"]["settings"]["run"]["steps"], 12);
  }
  std::ifstream job_log(out + "/runs/a-r1.jsonl");
  std::string first_line;
  std::getline(job_log, first_line);
  EXPECT_EQ(nlohmann::json::parse(first_line)["record"], "header") << "the metrics log does not begin with its header";
  const std::vector<std::vector<std::string>> abba = {{"a", "b"}, {"b", "a"}, {"a", "b"}, {"b", "a"}, {"a", "b"}};
  EXPECT_EQ(r["method"]["order"].get<std::vector<std::vector<std::string>>>(), abba);
  std::ifstream md(out + "/report.md");
  const std::string markdown((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(markdown.find("| b | "), std::string::npos) << markdown;
  const CommandResult svg = run_shell("python3 -c \"import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]); "
                                      "ns = '{http://www.w3.org/2000/svg}'; "
                                      "print(len(t.findall('.//' + ns + 'circle')), len(t.findall('.//' + ns + 'path')))\" " +
                                      out + "/report.svg");
  ASSERT_EQ(svg.exit_code, 0) << svg.output;
  EXPECT_EQ(svg.output, "100 2\n") << "one dot per sample, one loss curve per arm";
}

TEST_F(AbCommand, DeeperModelIsSlowerAndTrainsSomethingElse) {
  std::string out;
  const CommandResult run = ab("--arm base --arm deep --set model.layers=32 --rounds 3 --steps 10 --warmup 2", &out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = report(out);
  const auto& c = r["comparisons"][0];
  EXPECT_EQ(c["verdict"], "slower") << c.dump(2);
  EXPECT_GT(c["ratio"].get<double>(), 1.5);
  EXPECT_GT(c["ci_low"].get<double>(), 1.0);
  EXPECT_LT(c["p_value"].get<double>(), 0.05);
  EXPECT_FALSE(c["same_training"]);
  EXPECT_NE(c["loss_statement"].get<std::string>().find("model.layers"), std::string::npos);
}

TEST_F(AbCommand, SchedulesTrainTheSameModelAndAnotherSeedDoesNot) {
  std::string out;
  const CommandResult run = ab("--set parallel.pipeline=2 --set launch.nproc_per_node=2 --arm 1f1b "
                               "--arm interleaved --set plugins.scheduler=sched-interleaved --set parallel.virtual_stages=2 "
                               "--arm seed --set run.seed=7 --rounds 2 --steps 6 --warmup 2",
                               &out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = report(out);
  ASSERT_EQ(r["comparisons"].size(), 2u);
  const auto& schedules = r["comparisons"][0];
  EXPECT_EQ(schedules["arm"], "interleaved");
  EXPECT_TRUE(schedules["losses_equivalent"]) << schedules.dump(2);
  EXPECT_TRUE(schedules["same_training"]);
  EXPECT_LT(schedules["loss_max_rel_diff"].get<double>(), 1e-4);
  const auto& seed = r["comparisons"][1];
  EXPECT_FALSE(seed["losses_equivalent"]) << seed.dump(2);
  EXPECT_FALSE(seed["same_training"]);
  EXPECT_NE(seed["loss_statement"].get<std::string>().find("run.seed"), std::string::npos);
}

TEST_F(AbCommand, AnFp8ArmIsTheSameModelWhoseLossesDifferByDesign) {
  std::string out;
  const CommandResult run =
      ab("--arm fp32 --arm fp8 --set precision.fp8=hybrid --rounds 1 --steps 4 --warmup 1", &out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = report(out);
  ASSERT_EQ(r["comparisons"].size(), 1u);
  const auto& fp8 = r["comparisons"][0];
  EXPECT_TRUE(fp8["same_training"]) << fp8.dump(2);
  EXPECT_TRUE(fp8["losses_differ_by_design"]) << fp8.dump(2);
  EXPECT_GT(fp8["loss_max_rel_diff"].get<double>(), 0.0);
  EXPECT_NE(fp8["loss_statement"].get<std::string>().find("their losses differ by design"), std::string::npos)
      << fp8["loss_statement"];
}

TEST_F(AbCommand, LauncherTemplateStartsTheRanks) {
  std::string out;
  const std::string launcher = std::string(PTDP_TEST_DATA_DIR) + "/local_srun.sh 2";
  const CommandResult run = ab("--set parallel.pipeline=2 --set launch.nproc_per_node=2 --arm a --arm b --set parallel.recompute=full "
                               "--rounds 1 --steps 4 --warmup 2 --launcher '" + launcher + "'",
                               &out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = report(out);
  EXPECT_EQ(r["launcher"], launcher);
  EXPECT_TRUE(r["arms"][0]["peak_memory_gib"].is_null()) << "the ranks are out of sight under a launcher";
  EXPECT_EQ(r["arms"][0]["header"]["layout"]["world_size"], 2);
  EXPECT_TRUE(r["comparisons"][0]["losses_equivalent"]);
  std::ifstream log(out + "/runs/a-r1.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("starting 2 ranks"), std::string::npos) << "ptdp-host started the ranks, not the template";
}

TEST_F(AbCommand, ManifestFilesAreArmsNamedAfterThem) {
  const std::string a = workspace_->dir() + "/small.toml", b = workspace_->dir() + "/wide.toml";
  fs::copy_file(workspace_->manifest(), a, fs::copy_options::overwrite_existing);
  std::ifstream in(workspace_->manifest());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("hidden = 32"), 11, "hidden = 64");
  std::ofstream(b) << text;
  const std::string out = workspace_->dir() + "/ab-files";
  const CommandResult run = run_shell(std::string(PTDP_TEST_HOST) + " ab " + a + " " + b +
                                      " --rounds 1 --steps 4 --warmup 2 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = report(out);
  EXPECT_EQ(r["arms"][0]["name"], "small");
  EXPECT_EQ(r["arms"][1]["name"], "wide");
  EXPECT_FALSE(r["comparisons"][0]["same_training"]);
}

TEST_F(AbCommand, InvalidArmRefusesTheWholeAbBeforeAnythingRuns) {
  for (const char* bad : {"parallel.pipeline=3", "plugins.scheduler=sched-missing"}) {
    std::string out;
    const CommandResult run = ab(std::string("--arm good --arm bad --set ") + bad, &out);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_EQ(run.output.rfind("arm 'bad': ", 0), 0u) << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
    EXPECT_FALSE(fs::exists(out + "/runs")) << "a job ran before the bad arm was refused";
  }
}

TEST_F(AbCommand, RefusalsAreOneLineNamingTheProblem) {
  std::string earlier;
  ASSERT_EQ(ab("--arm a --arm b --rounds 1 --steps 3 --warmup 1", &earlier).exit_code, 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--arm a", "an A/B needs two arms; one --arm was given"},
      {"", "an A/B needs two arms: --arm NAME [--set k=v]... twice, or two or more manifests"},
      {"--arm a --arm a", "arm 'a' is named twice"},
      {workspace_->manifest() + " --arm a --arm b",
       "--arm takes one manifest (its arms differ by --set); several manifests are each an arm"},
      {"--arm a --arm 'b c'", "arm name 'b c': use letters, digits, '.', '_' and '-' (it names files)"},
      {"--arm a --arm b --rounds 0", "--rounds 0: at least 1"},
      {"--arm a --arm b --confidence 1.5", "--confidence 1.5: must lie between 0 and 1"},
      {"--arm a --arm b --min-effect nan", "--min-effect nan: must be at least 0 and below 1"},
      {"--arm a --arm b --loss-tolerance inf", "--loss-tolerance inf: must be above 0 and below 1"},
      {"--arm a --arm b --loss-tolerance -1", "--loss-tolerance -1: must be above 0 and below 1"},
      {"--arm a --arm b --steps 4 --warmup 3",
       "arm 'a': run.steps = 4 leaves fewer than 2 samples after 3 warm-up steps; give more --steps or fewer --warmup"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult run = ab(args);
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.output;
    EXPECT_EQ(run.output, message + "\n") << args;
  }
  const CommandResult again = run_shell(std::string(PTDP_TEST_HOST) + " ab " + workspace_->manifest() +
                                        " --arm a --arm b --out " + earlier);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.output, earlier + ": holds an earlier A/B report; give another --out\n");
  const CommandResult nowhere = run_shell(std::string(PTDP_TEST_HOST) + " ab " + workspace_->manifest() +
                                          " --arm a --arm b --out /proc/ptdp-ab");
  EXPECT_EQ(nowhere.exit_code, 1);
  EXPECT_EQ(nowhere.output.rfind("/proc/ptdp-ab: cannot create the output folder: ", 0), 0u) << nowhere.output;
}

TEST_F(AbCommand, FailedJobNamesTheArmRoundAndLog) {
  std::string out;
  const CommandResult run = ab("--arm a --arm b --rounds 1 --steps 4 --warmup 2 --launcher false", &out);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  // After the progress line of the job that failed.
  EXPECT_NE(run.output.find("\narm 'a', round 1: ptdp-host run exited with status 1"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(out + "/runs/a-r1.log"), std::string::npos) << run.output;
}

// SIGTERM to an A/B (what a batch system sends before it kills the job) stops its running job,
// which finishes its step, and the A/B says which job it stopped and where the jobs' files are.
TEST_F(AbCommand, ASigtermSaysWhatWasStoppedAndWhereItsFilesAre) {
  const std::string out = workspace_->dir() + "/ab-stopped", log = workspace_->dir() + "/ab-stopped.log";
  const std::string command = "exec " + std::string(PTDP_TEST_HOST) + " ab " + workspace_->manifest() +
                              " --arm a --arm b --rounds 2 --steps 100000 --warmup 2 --out " + out + " > " + log +
                              " 2>&1";
  const pid_t ab = ::fork();
  if (ab == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(ab, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_steps(out + "/runs/a-r1.jsonl") < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(count_steps(out + "/runs/a-r1.jsonl"), 2) << "the first job did not train";
  ASSERT_EQ(::kill(ab, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(ab, &status, 0), ab);
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << output;
  EXPECT_NE(output.find("ab: stopped by signal 15 (SIGTERM) during arm 'a', round 1/2 (job 1/4); 0 jobs finished, "
                        "and the metrics and logs of every job so far are in " + out + "/runs (this job's: " + out +
                        "/runs/a-r1.log); no report was written"),
            std::string::npos)
      << output;
  EXPECT_FALSE(fs::exists(out + "/runs/b-r1.log")) << "a job started after the signal";
  std::ifstream job_log(out + "/runs/a-r1.log");
  const std::string job_output((std::istreambuf_iterator<char>(job_log)), std::istreambuf_iterator<char>());
  EXPECT_NE(job_output.find("stopped by signal 15 (SIGTERM) after step"), std::string::npos) << job_output;
}

}  // namespace
}  // namespace ptdp::test
