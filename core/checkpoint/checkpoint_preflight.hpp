#pragma once
// What can be known about a run's checkpoint folder before any rank starts, checked once, in
// one process: that the folder can be written, that the run would not mix with another run's
// steps (resume_point), that the step it resumes is of the manifest's model (resumed_model),
// that a save fits in the free space; and, for a run, it clears what interrupted saves left
// behind, which would otherwise keep the disk full.
#include "manifest/run_config.hpp"

namespace ptdp {

enum class CheckpointFolderUse {
  Run,       // a run about to start: also removes what interrupted saves left
  Validate,  // `validate`: changes nothing (a folder it had to create to test is removed again)
};

// Does nothing when checkpoint.dir is empty and nothing is resumed. Throws ptdp::Error with one
// line naming the folder (and step) and the reason; logs what it removed and the space a save needs.
void prepare_checkpoint_folder(const RunConfig& config, CheckpointFolderUse use = CheckpointFolderUse::Run);

}  // namespace ptdp
