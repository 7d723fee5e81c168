#pragma once
// One output stream of a rank, forwarded to the launcher's own line by line with the rank as
// prefix, so that the lines of several ranks never interleave mid-line.
#include <string>

#include "launch/socket_io.hpp"

namespace ptdp {

struct ForwardedOutput {
  net::FileDescriptor pipe;  // the rank's end is its stdout or stderr
  int target = 1;            // the launcher's descriptor it goes to
  std::string prefix;        // "[rank 3] "
  std::string partial;       // a line not yet ended

  // Forwards what is there; false at the end of the stream (the last partial line is written).
  bool pump();
};

}  // namespace ptdp
