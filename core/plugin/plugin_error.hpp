#pragma once
// The error the plugin registry and factory raise: always one line that names the plugin (by
// file or by name) and the reason it was refused.
#include "ptdp/error.hpp"

namespace ptdp {

class PluginError : public Error {
 public:
  using Error::Error;
};

}  // namespace ptdp
