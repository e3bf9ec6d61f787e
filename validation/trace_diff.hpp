#pragma once
// Step-by-step comparison of two traces of the same run (specdec trace diff): token ids, drafts,
// trees, acceptance decisions and every other step field exactly, logits rows within the
// tolerance policy, measured with the same row comparison as specdec validate --trace.
#include <optional>
#include <string>
#include <vector>

#include "validation/tolerance_policy.hpp"
#include "validation/validation_report.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

struct TraceDiffReport {
  bool same = false;
  int steps_a = 0, steps_b = 0;
  int steps_compared = 0;  // equal steps, in order from step 0
  int tokens_equal = 0;    // tokens those steps emitted
  std::optional<Divergence> first_divergence;  // reference = A, candidate = B
  std::vector<QuantitySummary> quantities;     // worst logit error per compared quantity
  DrafterRowCounts drafter_rows;  // B's drafter rows, when both traces record them
  // What the two runs were asked to do differently ("sampling: greedy vs sample temperature=0.8",
  // "method shape: k=4 vs tree=dynamic ...", the policy, the token budget, the models' weights):
  // empty for two runs of one configuration (on two backends, say), whose outputs must agree.
  std::vector<std::string> config_differences;
};

// The configuration differences of two traces (TraceDiffReport::config_differences).
std::vector<std::string> config_differences(const Trace& a, const Trace& b);

// A is the reference, B the candidate. Compares until the first divergence.
TraceDiffReport diff_traces(const Trace& a, const Trace& b, const TolerancePolicy& policy = TolerancePolicy::defaults());

nlohmann::json to_json(const TraceDiffReport& report);

}  // namespace specdec::validation
