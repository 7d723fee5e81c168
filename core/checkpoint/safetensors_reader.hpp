#pragma once
// Reads a safetensors file of fp32 tensors (what `ptdp-host export hf` writes and Hugging Face
// GPT-2 folders hold), with every bound checked before anything is allocated: the header at most
// 100 MB (the reference implementation's limit), every tensor's bytes inside the file and
// matching its shape.
#include <map>
#include <string>

#include "checkpoint/safetensors_writer.hpp"

namespace ptdp {

// By name. Throws ptdp::Error "<path>: <reason>" for a file that is not such a file, or holds a
// tensor of another dtype (convert it to F32 first).
std::map<std::string, NamedF32Tensor> read_safetensors(const std::string& path);

}  // namespace ptdp
