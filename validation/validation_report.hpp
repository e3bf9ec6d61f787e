#pragma once
// What a validation run found: pass or the first divergence, the near-ties it excused, and how
// close every compared quantity came to its bound.
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validation/tolerance_policy.hpp"
#include "text/tokenizer.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// A token decision that differed where the reference was within the near-tie margin of
// flipping; the comparison forced the reference's outcome and went on.
struct NearTie {
  int step = 0;
  int32_t position = 0;
  std::string kind;               // "choice" | "test" | "draw" | "draft"
  int row = -1;                   // target logits row the decision read (-1: a draft)
  int32_t reference_token = -1;
  int32_t candidate_token = -1;
  std::string reference, candidate;  // the two decisions in words
  double margin = kUnknown;       // the reference's distance to flipping
  std::string margin_units;       // "logit" | "probability" | "" (drafts)
  double logit_error = kUnknown;  // max |Δ logit| over the row read
};

// A draft-free method's drafts at a step where the candidate's are not the rule's ("draft rule").
struct DraftRuleMismatch {
  std::string method;                                    // the rule: ngram, prompt-lookup, ngram-tree, suffix, suffix-tree
  std::vector<int32_t> rule_tokens, rule_parents;        // what the rule drafts for the recorded history
  std::vector<int32_t> candidate_tokens, candidate_parents;  // what the candidate drafted
  int node = 0;                    // the first node where they differ
  int64_t history = 0;             // the history's length (prompt + tokens emitted before the step)
  int32_t match_length = 0;        // the rule's matched n-gram (suffix) length; 0 when it drafts nothing
  int64_t match_position = -1;     // where the earlier occurrence of the matched n-gram starts; -1 none / unknown
  int64_t copied_from = -1;        // the rule's first draft's position in the history (or the response)
  int64_t request = -1;            // the earlier request the rule copied from (suffix decoding's responses); -1 none
  int64_t candidate_copied_from = -1;  // the candidate's own source of the first draft, when its trace records sources
  int32_t candidate_match_length = -1;
};

// The first difference that the policy does not excuse.
struct Divergence {
  int step = -1;                  // -1: not tied to a step (step count, output)
  int32_t position = -1;
  std::string what;               // "token", "target logits", "hidden states", "draft LM logits",
                                  // "draft distributions", "draft", "drafter inputs", "drafter hidden",
                                  // "drafter logits", "drafter rows", "draft rule", "step field", "steps",
                                  // "near-ties"
  std::string detail;             // one line in words
  int row = -1;                   // target logits row; for "drafter ..." the step's drafter row
  int drafter_call = -1;          // "drafter ...": the reference's drafter forward of that row
  int32_t reference_token = -1;
  int32_t candidate_token = -1;
  double margin = kUnknown;
  std::string margin_units;
  double logit_error = kUnknown;
  double value = kUnknown;        // tolerance failures: the measured value ...
  double bound = kUnknown;        // ... and its bound
  std::vector<int32_t> reference_emitted, candidate_emitted;  // the step's emitted tokens
  // Localisation (a candidate trace with per-layer target states): the first layer and sub-step
  // of the step's target forward whose state is out of tolerance, in forward order; -1 / "" when
  // none is, or the trace records none.
  int layer = -1;
  std::string substep;     // input_norm | attention | post_attention_norm | mlp
  int layer_row = -1;      // the forward's row (0 = the first token of the forward) where it is worst
  double layer_value = kUnknown;  // its NMSE, against the hidden-state bound
  std::optional<DraftRuleMismatch> draft_rule;  // what == "draft rule": both drafts and the rule's match
};

// How one compared quantity fared: the worst value seen against its bound.
struct QuantitySummary {
  std::string quantity;
  std::string rule;
  double bound = 0;
  double worst = 0;
  std::string worst_at;  // "step 3 row 1"
  long compared = 0;     // rows (or entries) compared
  long passed = 0;       // of those, within the bound
  bool pass = true;
};

// A candidate trace's drafter rows (traces/SCHEMA.md, "Drafter inputs and outputs"): what became of
// them. A row is compared when the reference's drafter ran a row fed the same token at the same
// position, and passes when it agrees within tolerance; a row without such a counterpart while
// the drafts agree is passed over (another engine's drafting schedule, or a row of nothing the
// reference ran). The rest were not compared: steps the comparison did not reach or whose drafts
// were forced, rows after the point where the drafts part.
struct DrafterRowCounts {
  long recorded = 0;     // every drafter row of the candidate's trace
  long compared = 0;
  long passed = 0;
  long passed_over = 0;
  long not_compared() const { return recorded - compared - passed_over; }
};

// The token decisions the compared steps exercised (counted on the reference's steps): what the
// validation could have caught. A rule the run never exercised is untested however the run ends:
// with no rejection, a wrong residual rule passes; with no fully accepted draft, a wrong bonus rule.
struct DecisionCoverage {
  bool speculative = false;  // some compared step drafted
  bool sampled = false;      // sample mode: the token after a rejection is a residual draw
  long tests = 0;            // acceptance tests of draft nodes
  long accepted = 0, rejected = 0;
  long after_rejection = 0;  // tokens emitted after a rejection: residual draws (sample mode), else the target's choice
  long bonus = 0;            // tokens emitted after a draft accepted to its leaf
};
// Over steps [0, n) of `steps`; `sampled`: the run's sampling mode is sample.
DecisionCoverage decision_coverage(const std::vector<StepRecord>& steps, int n, bool sampled);
// One sentence per rule the run did not exercise; empty when it exercised all (or did not draft).
std::vector<std::string> coverage_gaps(const DecisionCoverage& c);
// The sum of two runs' coverage (validate --seeds / --prompts).
DecisionCoverage& operator+=(DecisionCoverage& total, const DecisionCoverage& run);
// {acceptance_tests, accepted, rejected, after_rejection, bonus, untested: coverage_gaps}.
nlohmann::json to_json(const DecisionCoverage& c);
// "25 acceptance tests (21 accepted, 4 rejected), 4 residual draws, 5 bonus tokens".
std::string coverage_text(const DecisionCoverage& c);

struct ValidationReport {
  bool passed = false;
  std::string candidate;   // backend name
  std::string reference;   // backend name, or "trace FILE"
  std::string method;
  int reference_steps = 0;
  int steps_compared = 0;  // steps found equal (forced ones included)
  int tokens_compared = 0;
  int candidate_runs = 0;  // 1 + reruns after near-ties
  std::vector<NearTie> near_ties;
  std::vector<QuantitySummary> quantities;
  DrafterRowCounts drafter_rows;  // a candidate trace with drafter rows (validate --candidate)
  DecisionCoverage coverage;      // of the steps compared
  std::optional<Divergence> failure;
  TolerancePolicy policy;
};

// JSON of the counts: recorded, compared, passed, passed_over, not_compared.
nlohmann::json to_json(const DrafterRowCounts& counts);
// ", drafter rows: C of R compared (P passed), O passed over" for a summary line; empty without rows.
std::string summary_text(const DrafterRowCounts& counts);
// The failure when a candidate's drafter rows were all passed over: nothing of its drafter was
// validated ("drafter rows"); none otherwise.
std::optional<Divergence> all_passed_over(const DrafterRowCounts& counts);

nlohmann::json to_json(const ValidationReport& report);
// Human-readable: verdict, the first divergence in full, near-ties, the quantity table. With the
// checkpoint's tokenizer, tokens are shown with their text as well as their ids.
void print_report(const ValidationReport& report, std::ostream& out, const text::Tokenizer* tokenizer = nullptr);

}  // namespace specdec::validation
