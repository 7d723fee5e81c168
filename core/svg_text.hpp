#pragma once
// Text placed in SVG pictures (schedule timelines, loss curves) must not break the XML.
#include <string>

namespace ptdp {

inline std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace ptdp
