#pragma once
// Reads `specdec explain`'s text back into per-step facts, for the tests of the text and of the
// page (whose tree must show what the text says).
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

namespace specdec::testing {

struct ExplainedStep {
  int index = -1;
  bool sequential = false;
  int drafted = 0;
  bool cut = false;          // the header says the step was cut
  int kept = -1, produced = -1;  // from the "emitted" line
  int accepted = 0, discarded = 0, rejected = 0;
  int drafter_forwards = 0;  // from the "emitted" line (none for a sequential step)
  std::string final_kind;    // bonus | correction | target
  bool final_discarded = false;
  std::vector<std::string> lines;  // the step's lines, header first
  int unreached() const { return drafted - accepted - discarded - rejected; }
};

inline bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

inline std::vector<ExplainedStep> parse_explain(const std::string& out) {
  std::vector<ExplainedStep> steps;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("step ", 0) == 0) {
      ExplainedStep s;
      s.index = std::stoi(line.substr(5));
      s.sequential = has(line, "prefill →") || has(line, "target forward →");
      if (s.sequential) {
        s.final_kind = "target";
        s.kept = s.produced = 1;
      }
      const size_t d = line.find("drafted ");
      if (d != std::string::npos && d + 8 < line.size() && std::isdigit(static_cast<unsigned char>(line[d + 8]))) {
        s.drafted = std::stoi(line.substr(d + 8));  // "drafted 4 (chain)"; "nothing drafted (...)" drafted none
      }
      s.cut = has(line, "[cut by");
      s.lines.push_back(line);
      steps.push_back(s);
      continue;
    }
    if (steps.empty() || line.rfind("  ", 0) != 0) continue;
    ExplainedStep& s = steps.back();
    s.lines.push_back(line);
    if (has(line, "✓ accept")) {
      (has(line, "[discarded") ? s.discarded : s.accepted)++;
    } else if (has(line, "✗ reject")) {
      ++s.rejected;
    } else if (line.rfind("  + ", 0) == 0) {
      // A step with no drafts ends with the target's own token, a bonus at the root.
      s.final_kind = has(line, " bonus (") || has(line, "the target's own token") ? "bonus" : "correction";
      s.final_discarded = has(line, "[discarded");
    } else if (line.rfind("  emitted ", 0) == 0) {
      const size_t open = line.rfind("  (");
      std::istringstream nums(line.substr(open + 3));
      nums >> s.kept;
      std::string word;
      nums >> word;
      if (word == "of") {
        nums >> s.produced;
      } else {
        s.produced = s.kept;
      }
      const size_t d = line.rfind(" drafter forward");  // "(5 tokens, 4 drafter forwards)"
      const size_t comma = line.rfind(", ", d);
      if (d != std::string::npos && comma != std::string::npos) s.drafter_forwards = std::stoi(line.substr(comma + 2));
    }
  }
  return steps;
}

}  // namespace specdec::testing
