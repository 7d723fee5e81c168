// The ckpt-fs plugin's entry symbol and configuration schema.
#include <ptdp/plugin.hpp>

#include "fs_checkpoint_store.hpp"

namespace {

const ptdp::ConfigKeySpec kSchema[] = {
    {"fsync", ptdp::ConfigType::Bool, "true", 0, 0, nullptr,
     "fsync every file and folder of a step before it becomes visible; off is faster but a "
     "crash of the machine may leave a listed step incomplete"},
};

}  // namespace

PTDP_PLUGIN(ptdp::PluginKind::CheckpointStore, ptdp::CheckpointStore, ptdp::ckptfs::FsCheckpointStore,
            "ckpt-fs", "1.0.0", kSchema)
