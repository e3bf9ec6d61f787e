#pragma once
// The numbers and lists `specdec simulate` reads from its options: "1,2,4", "1-8" or a mix, each
// value bounded before a range is enumerated; errors name the option.
#include <string>
#include <vector>

namespace specdec::cli {

// "a,b,,c" → {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& s);
// The whole of `s` as a finite number.
double parse_double(const std::string& s, const std::string& option);
// The whole of `s` as an integer of magnitude at most 1e9.
int parse_int(const std::string& s, const std::string& option);
// "1,2,4" or "1-8" (or a mix: "1-4,8"). Every value must be at most `max_value`, and the list holds
// at most kMaxSweepCells values: both are checked on a range's ends before it is enumerated.
std::vector<int> parse_int_list(const std::string& s, const std::string& option, long long max_value);
// --best-k's Ks: "N" alone means 1..N; otherwise a list or range as parse_int_list reads it.
std::vector<int> best_k_list(const std::string& s);
// One value of an option, at most `max_value` (named in the error).
int parse_bounded_int(const std::string& s, const std::string& option, long long max_value, const std::string& what);

}  // namespace specdec::cli
