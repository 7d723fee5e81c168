#pragma once
// The text of a small valid manifest (4 layers, hidden 32, one rank) for tests that load
// manifests from memory and change them with --set overrides.
namespace ptdp::test {

inline constexpr const char* kTinyManifest = R"(
[model]
layers = 4
hidden = 32
heads = 4
seq_len = 16
vocab = 256
[parallel]
micro_batch = 1
global_batch = 8
[data]
path = "corpus.txt"
)";

}  // namespace ptdp::test
