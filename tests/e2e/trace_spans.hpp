#pragma once
// The spans of a Chrome trace that `ptdp-host run --trace` wrote, by rank.
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptdp::test {

// One span: (name, category, thread, start, end) in microseconds.
struct Span {
  std::string name, category;
  int tid;
  double start, end;
};

inline std::map<int, std::vector<Span>> spans_by_rank(const std::string& trace_path) {
  std::ifstream in(trace_path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::map<int, std::vector<Span>> spans;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X")
      spans[e.at("pid").get<int>()].push_back({e.at("name"), e.value("cat", ""), e.at("tid").get<int>(),
                                               e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()});
  return spans;
}

}  // namespace ptdp::test
