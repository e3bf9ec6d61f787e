#pragma once
// How closely a backend must reproduce the reference (docs/validation.md has the same table with
// the reasons). Every bound lives here, once: the validator, the command line and the
// documentation test read them from TolerancePolicy.
#include <string>
#include <vector>

namespace specdec::validation {

struct TolerancePolicy {
  // Floating-point quantities, compared per row by normalised mean squared error
  // NMSE = Σ(candidate − reference)² / Σ reference².
  double logits_nmse = 1e-6;        // target logits rows (and a draft LM's, in live runs)
  double hidden_nmse = 1e-6;        // target hidden states returned to drafters (final, aux)
  // Rows a trace keeps as top-k summaries.
  double logsumexp_abs = 1e-3;      // |Δ log Σ exp(row)|
  // Sampled drafts: the distributions q the drafts were drawn from, max |Δq| over the vocabulary.
  double draft_probability_abs = 1e-4;
  // Near-ties: a token decision that differs is excused when the reference's decision was this
  // close to flipping. Greedy / coupled choices: top-two margin in logit units (coupled: of
  // logit + T·Gumbel). Sampled decisions (acceptance tests, draws): |u − boundary|.
  double near_tie_logit_margin = 1e-2;
  double near_tie_probability_margin = 1e-3;
  // More excused near-ties than this in one run fails it: rounding explains a few, not many.
  int max_near_ties = 8;

  static const TolerancePolicy& defaults();
};

// One line of the policy table: quantity, rule, bound (as text), why.
struct PolicyRow {
  std::string quantity, rule, bound, why;
};
std::vector<PolicyRow> policy_table(const TolerancePolicy& policy);
// The table as Markdown (the table in docs/validation.md).
std::string policy_markdown(const TolerancePolicy& policy);

}  // namespace specdec::validation
