#include "schedule/instruction_stream.hpp"

namespace ptdp {

std::string buffer_label(const Transfer& transfer) {
  return std::string(transfer.payload == Transfer::Payload::Activation ? "activation" : "gradient") +
         " of microbatch " + std::to_string(transfer.microbatch) + " from virtual stage " +
         std::to_string(transfer.source_virtual_stage);
}

}  // namespace ptdp
