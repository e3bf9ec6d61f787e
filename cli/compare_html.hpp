#pragma once
// The page `specdec compare --html OUT.html` writes: the methods side by side on one prompt, one
// column each — its header facts, tokens per step, each step's draft tree or chain and its cost
// in forwards, its output marked by step — under a summary table (AL, tokens, forwards) and
// whether every output agrees token for token with the first method's. Drawn by the explain
// page's script (explain_html.hpp): one self-contained file, no network.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/explain_html.hpp"
#include "cli/explain_steps.hpp"

namespace specdec::cli {

// One method's run as compare reports it.
struct ComparedRun {
  std::string label;            // "eagle3 k=2"
  nlohmann::json facts;         // method_facts (run_header.hpp)
  ExplainRun run;               // every step, recorded as explain records it
  double acceptance_length = 1; // as compare's table: tokens per speculative step as verified
  int target_forwards = 0, drafter_forwards = 0;
};

// `facts`: what every run shares (context_facts); `exact_mode`: greedy or coupled sampling, where
// the outputs must agree.
std::string compare_page(const std::vector<ComparedRun>& runs, const nlohmann::json& facts, bool exact_mode, const TokenText& text);

}  // namespace specdec::cli
