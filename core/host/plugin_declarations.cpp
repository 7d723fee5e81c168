#include "plugin_declarations.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <ptdp/communicator.hpp>
#include <ptdp/layer_kernels.hpp>
#include <ptdp/precision.hpp>

#include "plugin/plugin_factory.hpp"

namespace ptdp::host {

namespace {

const char* memory_name(MemoryKind kind) { return kind == MemoryKind::Cuda ? "cuda" : "host"; }

// One bit of a declaration: its name in --json and in the text.
struct DeclaredBit {
  uint32_t bit;
  const char* key;
  const char* text;
};

// The bits of `bits` that are set: their keys into json[field], their texts joined by `separator`.
std::string declare_bits(uint32_t bits, std::initializer_list<DeclaredBit> table, const char* field,
                         const char* separator, PluginDeclarations& out) {
  std::vector<std::string> keys, texts;
  for (const DeclaredBit& b : table)
    if (bits & b.bit) keys.push_back(b.key), texts.push_back(b.text);
  out.json[field] = keys;
  return fmt::format("{}", fmt::join(texts, separator));
}

void declare_communicator(const Communicator& comm, PluginDeclarations& out) {
  const std::string memory = declare_bits(comm.memory_kinds(),
                                          {{memory_bit(MemoryKind::Host), "host", "host"},
                                           {memory_bit(MemoryKind::Cuda), "cuda", "CUDA"}},
                                          "memory_kinds", " and ", out);
  const std::string keeps = declare_bits(comm.capabilities(),
                                         {{capability_bit(CommCapability::MatchesTags), "matches_tags", "tag matching"},
                                          {capability_bit(CommCapability::NamesDeadPeer), "names_dead_peer",
                                           "names a dead peer"},
                                          {capability_bit(CommCapability::SharesDevice), "shares_device",
                                           "shares a device"}},
                                         "capabilities", ", ", out);
  out.lines.push_back(fmt::format("moves {} memory; {}", memory.empty() ? "no" : memory,
                                  keeps.empty() ? "no capabilities" : keeps));
}

void declare_kernels(const LayerKernels& kernels, uint32_t abi_minor, PluginDeclarations& out) {
  const char* device = memory_name(kernels.device().kind);
  const char* activation = dtype_name(kernels.activation_dtype());
  out.json["device"] = device;
  out.json["activation"] = activation;
  // A plugin built before ABI 1.7 has no precisions() to ask.
  const std::string runs = declare_bits(abi_minor >= 7 ? kernels.precisions() : 0,
                                        {{precision_bit(PrecisionSupport::Fp8Hybrid), "fp8_hybrid", "FP8 hybrid"},
                                         {precision_bit(PrecisionSupport::Fp16), "fp16", "fp16"}},
                                        "precisions", ", ", out);
  // A plugin built before ABI 1.8 has no activation_memory_features() to ask.
  const std::string cuts = declare_bits(
      abi_minor >= 8 ? kernels.activation_memory_features() : 0,
      {{feature_bit(ActivationMemoryFeature::SequenceParallel), "sequence_parallel", "sequence parallelism"},
       {feature_bit(ActivationMemoryFeature::SelectiveRecompute), "selective_recompute", "selective recomputation"}},
      "activation_memory", ", ", out);
  out.lines.push_back(fmt::format("computes on {} in {}; also runs {}; activation memory: {}", device, activation,
                                  runs.empty() ? "no other precision" : runs, cuts.empty() ? "no savings" : cuts));
}

PluginDeclarations declared_here(const PluginInfo& plugin) {
  PluginDeclarations out;
  try {
    if (plugin.descriptor->kind == PluginKind::Communicator)
      declare_communicator(*create_plugin<Communicator>(plugin, {}), out);
    else
      declare_kernels(*create_plugin<LayerKernels>(plugin, {}), plugin.descriptor->abi_minor, out);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

PluginDeclarations plugin_declarations(const PluginInfo& plugin) {
  const PluginKind kind = plugin.descriptor->kind;
  if (kind != PluginKind::Communicator && kind != PluginKind::LayerKernels) return {};
  // The plugin's own code answers, in a child process: one that crashes, or whose object is not of
  // the kind its descriptor claims, takes only the child down.
  int fds[2];
  if (::pipe(fds) != 0) return {{}, {}, std::string("cannot ask it: pipe(): ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    // The answer goes through the pipe; what the plugin, or a crash handler a library installed,
    // would print would only garble the listing.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO), ::dup2(null, STDERR_FILENO);
    const PluginDeclarations d = declared_here(plugin);
    const std::string text = nlohmann::ordered_json{{"json", d.json}, {"lines", d.lines}, {"error", d.error}}.dump();
    const bool written = ::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return {{}, {}, std::string("cannot ask it: fork(): ") + std::strerror(errno)};
  }
  const std::string text = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto answer = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !answer.is_object())
    return {{}, {}, WIFSIGNALED(status) ? fmt::format("making one crashed (signal {})", WTERMSIG(status))
                                        : "making one gave no answer"};
  PluginDeclarations out;
  out.json = answer["json"];
  out.lines = answer["lines"].get<std::vector<std::string>>();
  out.error = answer["error"].get<std::string>();
  return out;
}

}  // namespace ptdp::host
