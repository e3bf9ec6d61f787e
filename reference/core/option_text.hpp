#pragma once
// The pieces of "NAME,key=value,..." option texts (--method, --policy): fields split at a
// separator, and numbers that must be finite and whole strings.
#include <cmath>
#include <string>
#include <vector>

#include "reference/core/error.hpp"

namespace specdec {

// "a,b,,c" → {"a", "b", "", "c"}.
inline std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// The whole of `text` as a finite number; throws "<where>: '<text>' is not a finite number".
inline double parse_finite_number(const std::string& text, const std::string& where) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v)) throw Error(where + ": '" + text + "' is not a finite number");
  return v;
}

// The whole of `text` as an int (an integral finite number within int's range); throws
// "<where>: '<text>' is not an integer".
inline int parse_int(const std::string& text, const std::string& where) {
  double v = 0.5;
  try {
    v = parse_finite_number(text, where);
  } catch (const Error&) {
  }
  if (v != std::floor(v) || std::fabs(v) > 2147483647.0) throw Error(where + ": '" + text + "' is not an integer");
  return static_cast<int>(v);
}

}  // namespace specdec
