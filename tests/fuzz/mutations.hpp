#pragma once
// Mutations of well-formed inputs for the fuzz tests, from a fixed seed, so that every run (and
// CI) tries the same cases and a case that once failed is tried again. Byte mutations damage any
// file; JSON mutations keep the text parseable and put a value of the wrong type or range, or
// a huge one, where a field was, which is what reaches the code past the parser.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptdp::fuzz {

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  // One to three byte-level changes inside [0, region) of `bytes` (the whole of it when region
  // is 0 or larger): a flipped bit, a byte set to 0 or 0xff, bytes inserted or removed, a run
  // repeated, a number's digits replaced by an extreme one, or the file cut short.
  std::string bytes(std::string bytes, size_t region = 0) {
    const int changes = 1 + static_cast<int>(below(3));
    for (int c = 0; c < changes && !bytes.empty(); ++c) {
      const size_t end = region == 0 || region > bytes.size() ? bytes.size() : region;
      const size_t at = below(end);
      switch (below(8)) {
        case 0: bytes[at] = static_cast<char>(bytes[at] ^ (1 << below(8))); break;
        case 1: bytes[at] = below(2) ? '\0' : '\xff'; break;
        case 2: bytes.insert(at, std::string(1 + below(16), static_cast<char>(below(256)))); break;
        case 3: bytes.erase(at, 1 + below(16)); break;
        case 4: bytes.insert(at, bytes.substr(at, 1 + below(64))); break;
        case 5: bytes.insert(at, extreme_number()); break;
        case 6: bytes.resize(at); break;
        default: bytes.insert(at, std::string(below(2) ? 300 : 100000, 'k')); break;
      }
    }
    return bytes;
  }

  // `doc` with one to three of its values (anywhere below it, `doc` itself excepted) replaced by a
  // value of another type or an extreme one, or removed, or a key of 100,000 characters added.
  nlohmann::json json(nlohmann::json doc) {
    const int changes = 1 + static_cast<int>(below(3));
    for (int c = 0; c < changes; ++c) mutate_somewhere(doc, 0);
    return doc;
  }

  nlohmann::json odd_value() {
    switch (below(14)) {
      case 0: return nullptr;
      case 1: return true;
      case 2: return 0;
      case 3: return -1;
      case 4: return INT64_MAX;
      case 5: return UINT64_MAX;
      case 6: return 1e308;
      case 7: return -0.5;
      case 8: return "x";
      case 9: return std::string(5000, 'v');
      case 10: return nlohmann::json::array();
      case 11: return nlohmann::json::object();
      case 12: return nlohmann::json::array({1, "two", nullptr});
      default: return 2147483648LL;
    }
  }

 private:
  std::string extreme_number() {
    static const char* const numbers[] = {"0", "-1", "4294967296", "9223372036854775807", "18446744073709551616",
                                          "1e308", "-1e308", "nan", "inf", "1e-320", "2147483648"};
    return numbers[below(std::size(numbers))];
  }

  void mutate_somewhere(nlohmann::json& node, int depth) {
    const bool container = node.is_object() || node.is_array();
    if (!container || node.empty()) return;
    // Go deeper with some chance, so that nested fields are reached as often as top ones.
    auto child = node.begin();
    std::advance(child, static_cast<std::ptrdiff_t>(below(node.size())));
    if ((child->is_object() || child->is_array()) && !child->empty() && below(3) != 0 && depth < 8) {
      mutate_somewhere(*child, depth + 1);
      return;
    }
    switch (below(6)) {
      case 0:
        if (node.is_object()) {
          node.erase(child.key());
          return;
        }
        [[fallthrough]];
      case 1:
        if (node.is_object()) {
          node[std::string(100000, 'k')] = odd_value();
          return;
        }
        [[fallthrough]];
      default: *child = odd_value();
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace ptdp::fuzz
