// comm-nccl: ptdp's Communicator over NCCL, for CUDA memory.
#include "nccl_communicator.hpp"
#include "ptdp/plugin.hpp"

namespace {

const ptdp::ConfigKeySpec kSchema[] = {
    {"timeout_s", ptdp::ConfigType::Float, "0", 0.0, 86400.0, nullptr,
     "seconds an operation may wait for its peers before the communicator is aborted with an "
     "error; 0 uses the run's timeout"},
    {"synchronous", ptdp::ConfigType::Bool, "false", 0.0, 0.0, nullptr,
     "wait until every operation has finished on the GPU before returning (tests, debugging)"},
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::Communicator, ptdp::Communicator, ptdp::comm_nccl::NcclCommunicator,
            "comm-nccl", "1.0.0", kSchema)
