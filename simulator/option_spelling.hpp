#pragma once
// How a caller spells an option in messages: the command line's `--acceptance-by-depth 0.8,0.5`,
// Python's keyword `acceptance_by_depth=...`. The simulator's option checks are written once, with
// each option named in the command line's words, and speak to each caller in its own.
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specdec::sim {

struct OptionSpelling {
  std::string prefix;  // before the name: "--" or ""
  char separator;      // between its words: '-' or '_'
  std::string assign;  // between the name and a value: " " or "="
  // Options the caller names otherwise, as (command line's words, caller's name): Python's
  // specdec.calibrate takes `measured=` where the command line takes `--calibrate`.
  std::vector<std::pair<std::string, std::string>> renamed = {};

  // `option`, given in the command line's words without dashes ("acceptance-by-depth").
  std::string operator()(std::string_view option) const;
  // The option set to `value`: "--tp 16", "tp=16".
  std::string operator()(std::string_view option, std::string_view value) const;
  // "--alpha, --acceptance or --al": every option named, the last joined by `last` ("or", "and").
  std::string list(std::initializer_list<std::string_view> options, std::string_view last = "or") const;
  // This spelling with `names` (command line's words, caller's name) named otherwise.
  OptionSpelling renaming(std::initializer_list<std::pair<std::string, std::string>> names) const;
};

inline const OptionSpelling kCommandLineSpelling{"--", '-', " "};
inline const OptionSpelling kKeywordSpelling{"", '_', "="};

}  // namespace specdec::sim
