// The comm-ucx plugin's entry symbol and configuration schema.
#include "ptdp/plugin.hpp"
#include "ucx_communicator.hpp"

namespace {

const ptdp::ConfigKeySpec kSchema[] = {
    {"transports", ptdp::ConfigType::String, "\"\"", 0, 0, nullptr,
     "UCX transports in UCX_TLS syntax (e.g. \"shm,tcp\", \"tcp\", \"rc,sm\"); empty: UCX chooses"},
    {"timeout_s", ptdp::ConfigType::Float, "0", 0, 86400, nullptr,
     "seconds a blocking call may wait without progress before it fails; 0: the job's launch.timeout_s"},
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::Communicator, ptdp::Communicator, ptdp::comm_ucx::UcxCommunicator, "comm-ucx",
            "1.0.0", kSchema)
