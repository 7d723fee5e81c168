// A comm-ucx built without CUDA (or against a UCX without CUDA transports) moves host memory only.
#include "buffer_memory.hpp"

namespace ptdp::comm_ucx {

namespace {
constexpr const char* kWhy =
    "this comm-ucx was built without CUDA memory support (it needs CUDA and the UCX of PyPI's libucx-cu13 "
    "wheel, which scripts/setup.sh unpacks on machines with CUDA)";
}

bool cuda_memory_built() { return false; }
void activate_cuda_device(int) { throw Error(std::string("comm-ucx: ") + kWhy); }
std::unique_ptr<BufferMemory> make_cuda_memory(int, void*, PluginLog) { throw Error(std::string("comm-ucx: ") + kWhy); }

}  // namespace ptdp::comm_ucx
