#pragma once
// Number formatting for messages and recorded text.
#include <charconv>
#include <cstdio>
#include <string>

namespace specdec {

// Shortest text that reads back to the same double.
inline std::string format_double(double v) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

// Three significant digits ("%.3g"), for measured values in reports and messages.
inline std::string format_brief(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace specdec
