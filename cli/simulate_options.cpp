#include "cli/simulate_options.hpp"

#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "simulator/scenario_options.hpp"

namespace specdec::cli {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double parse_double(const std::string& s, const std::string& option) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error("--" + option + ": '" + s + "' is not a number");
}

int parse_int(const std::string& s, const std::string& option) {
  const double v = parse_double(s, option);
  if (v != std::floor(v) || std::fabs(v) > 1e9) throw Error("--" + option + ": '" + s + "' is not an integer");
  return int(v);
}

std::vector<int> parse_int_list(const std::string& s, const std::string& option, long long max_value) {
  std::vector<int> out;
  auto bounded = [&](int v) {
    if (v > max_value)
      throw Error("--" + option + ": " + std::to_string(v) + " is more than specdec supports (" +
                  std::to_string(max_value) + "); see docs/reliability.md");
    return v;
  };
  long long count = 0;
  for (const auto& item : split_list(s)) {
    const auto dash = item.find('-', 1);
    if (dash != std::string::npos) {
      const int a = parse_int(item.substr(0, dash), option), b = bounded(parse_int(item.substr(dash + 1), option));
      if (b < a) throw Error("--" + option + ": range '" + item + "' is empty");
      count += (long long)b - a + 1;
    } else {
      bounded(parse_int(item, option));
      count += 1;
    }
    check_input_limit("--" + option, "the number of values", count, kMaxSweepCells);
  }
  for (const auto& item : split_list(s)) {
    const auto dash = item.find('-', 1);
    if (dash != std::string::npos) {
      const int a = parse_int(item.substr(0, dash), option), b = parse_int(item.substr(dash + 1), option);
      for (int v = a; v <= b; ++v) out.push_back(v);
    } else {
      out.push_back(parse_int(item, option));
    }
  }
  if (out.empty()) throw Error("--" + option + ": no values in '" + s + "'");
  return out;
}

int parse_bounded_int(const std::string& s, const std::string& option, long long max_value, const std::string& what) {
  const int v = parse_int(s, option);
  check_input_limit("--" + option, what, v, (unsigned long long)max_value);
  return v;
}

std::vector<int> best_k_list(const std::string& s) {
  // K is bounded before the list is expanded: every K's prediction keeps its breakdown.
  std::vector<int> ks = parse_int_list(s, "best-k", kMaxDraftDepth);
  if (ks.size() == 1 && s.find('-') == std::string::npos) ks = sim::best_k_up_to(ks[0], sim::kCommandLineSpelling);
  return ks;
}

}  // namespace specdec::cli
