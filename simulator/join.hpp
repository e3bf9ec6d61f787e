#pragma once
// Joins names for error messages ("a, b, c").
#include <string>
#include <vector>

namespace specdec::sim {

inline std::string join_names(const std::vector<std::string>& names, const std::string& sep = ", ") {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += sep;
    out += n;
  }
  return out;
}

}  // namespace specdec::sim
