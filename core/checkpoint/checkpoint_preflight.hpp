#pragma once
// What can be known about a run's checkpoint folder before any rank starts, checked once, in
// one process: that the folder can be written, that the run would not mix with another run's
// steps (resume_point), that a save fits in the free space; and it clears what interrupted
// saves left behind, which would otherwise keep the disk full.
#include "manifest/run_config.hpp"

namespace ptdp {

// Does nothing when checkpoint.dir is empty. Throws ptdp::Error with one line naming the folder
// and the reason; logs what it removed and the space a save needs.
void prepare_checkpoint_folder(const RunConfig& config);

}  // namespace ptdp
