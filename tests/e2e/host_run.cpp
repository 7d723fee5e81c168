#include "host_run.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
comm = "comm-ucx"
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
  HostRun result;
  result.exit_code = ran.exit_code;
  result.output = ran.output;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (auto record = nlohmann::json::parse(line, nullptr, false); record.contains("step"))  // not the header
      result.losses.push_back(record["loss"].get<double>());
  return result;
}

}  // namespace ptdp::test
