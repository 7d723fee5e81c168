#include "host_run.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace ptdp::test {

namespace fs = std::filesystem;

CommandResult run_shell(const std::string& command_line) {
  CommandResult result;
  FILE* pipe = popen((command_line + " 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

TinyGptWorkspace::TinyGptWorkspace() {
  char tmpl[] = "/tmp/ptdp-e2e-XXXXXX";
  dir_ = mkdtemp(tmpl);
  std::ofstream text(dir_ + "/corpus.txt");
  // A text with structure, so losses move in a layout-sensitive way if anything is off.
  for (int i = 0; i < 400; ++i)
    text << "line " << i << ": the quick brown fox jumps over the lazy dog " << (i * 7919) % 1000 << "\n";
  text.close();
  manifest_ = dir_ + "/tiny.toml";
  std::ofstream m(manifest_);
  m << R"([run]
steps = 5
seed = 42
log_every = 1

[model]
layers = 8
hidden = 32
heads = 4
seq_len = 16
vocab = 256
dropout = 0.1

[parallel]
micro_batch = 2
global_batch = 8

[optimizer]
lr = 1e-3
warmup_steps = 2

[data]
path = "corpus.txt"
val_fraction = 0.1

[plugins]
kernels = "kernels-ref"
scheduler = "sched-1f1b"
search_path = [")" << PTDP_TEST_PLUGIN_DIR << R"("]

[launch]
timeout_s = 30
)";
}

TinyGptWorkspace::~TinyGptWorkspace() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

HostRun TinyGptWorkspace::run(const std::vector<std::string>& sets, int nproc, const std::string& extra_args) const {
  static int counter = 0;
  const std::string metrics = dir_ + "/metrics-" + std::to_string(counter++) + ".jsonl";
  std::ostringstream cmd;
  cmd << PTDP_TEST_HOST << " run " << manifest_ << " --nproc " << nproc << " --metrics " << metrics;
  for (const auto& s : sets) cmd << " --set " << s;
  cmd << " " << extra_args;
  const CommandResult ran = run_shell(cmd.str());
  return host_run_result(ran, metrics);
}

HostRun host_run_result(const CommandResult& ran, const std::string& metrics_path) {
  HostRun result;
  result.exit_code = ran.exit_code;
  result.output = ran.output;
  std::ifstream in(metrics_path);
  for (std::string line; std::getline(in, line);)
    if (auto record = nlohmann::json::parse(line, nullptr, false); record.contains("step")) {  // not the header
      result.losses.push_back(record["loss"].get<double>());
      result.lrs.push_back(record["lr"].get<double>());
      if (record.contains("loss_scale")) {
        result.loss_scales.push_back(record["loss_scale"].get<double>());
        result.skipped.push_back(record["skipped"].get<bool>());
      }
    }
  return result;
}

CommandResult run_host_command(const std::string& args) { return run_shell(std::string(PTDP_TEST_HOST) + " " + args); }

using Clock = std::chrono::steady_clock;

BackgroundRun::BackgroundRun(const TinyGptWorkspace& ws, const std::vector<std::string>& sets, int nproc,
                             const std::string& metrics_path)
    : metrics_path_(metrics_path), log_path_(metrics_path + ".log") {
  std::vector<std::string> args = {PTDP_TEST_HOST, "run", ws.manifest(), "--nproc", std::to_string(nproc),
                                   "--metrics", metrics_path};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    if (!freopen(log_path_.c_str(), "w", stdout)) _exit(126);
    dup2(fileno(stdout), STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
}

BackgroundRun::~BackgroundRun() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool BackgroundRun::wait_for_steps(int steps, std::chrono::seconds limit) const {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (count_steps(metrics_path_) >= steps) return true;
    siginfo_t info{};
    // WNOWAIT: look whether it ended without reaping it, so wait() still gets the status.
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::optional<int> BackgroundRun::wait(std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

std::string BackgroundRun::output() const {
  std::ifstream in(log_path_);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

int count_steps(const std::string& metrics_path) {
  std::ifstream in(metrics_path);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    n += nlohmann::json::parse(line, nullptr, false).contains("step");  // a complete step line, not the header
  return n;
}

std::vector<std::string> folder_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ptdp::test
