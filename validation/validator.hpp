#pragma once
// Step-by-step validation of a backend (DESIGN.md, "Exactness"): the method runs on the backend
// under test and on the reference backend, or is compared against a recorded trace; token ids,
// drafts, trees, acceptance decisions and emitted tokens must match exactly, logits and hidden
// states within the tolerance policy. A token decision that differs where the reference was
// within the near-tie margin is reported as a near-tie; the live side is then run again with the
// recorded side's logits (or draft) forced at that step, and the comparison continues from there.
// Inside, the two sides are live and recorded (validation/sides.hpp); the entry points below say
// which of them is the reference and which the candidate.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "validation/tolerance_policy.hpp"
#include "validation/validation_report.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"
#include "reference/policies/speculation_policy.hpp"
#include "reference/sampling/sampling_params.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

// What is run: the same on both sides.
struct ValidationSetup {
  std::string method = "sequential";  // for the report
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  GenerationOptions options;
  // A fresh proposer for one run, drafting with `draft_lm` (the side's draft LM, wrapped for
  // observation; null when the method has none) or `head` (the side's EAGLE-family head; null:
  // the setup's own). Unset, or returning null: sequential decoding.
  std::function<std::unique_ptr<Proposer>(const LanguageModel* draft_lm, const EagleHead* head)> make_proposer;
  // A fresh speculation policy for one run (the recorded run's --policy; unset: the method's whole
  // shape every step). Plain steps (depth 0) then verify the pending token alone on both sides.
  std::function<std::unique_ptr<SpeculationPolicy>()> make_policy;
  // A draft-free method (n-gram lookup, suffix decoding): a fresh proposer of its rule, with a run
  // state of its own. Set, validate_candidate_trace checks every step's recorded drafts against
  // what the rule drafts for the recorded history (draft_rule.hpp), also under force_drafts.
  std::function<std::unique_ptr<Proposer>()> make_rule_proposer;
  // The recorded run's speculation policy, replayed with the rule (unset: the fixed policy);
  // apart from make_policy, which forced drafts leave unset.
  std::function<std::unique_ptr<SpeculationPolicy>()> make_rule_policy;
};

// One side of a comparison: where target forwards and draft LM forwards go.
struct Backend {
  std::string name;
  const LanguageModel* target = nullptr;
  const LanguageModel* draft_lm = nullptr;  // --method draft only
  const EagleHead* head = nullptr;          // EAGLE-family methods: the head on this backend
};

// Runs the method on both backends and compares them. Throws specdec::Error for an unusable
// setup (no target, draft LM missing for a proposer that needs one, decoding errors).
ValidationReport validate_backends(const ValidationSetup& setup, const Backend& candidate, const Backend& reference,
                                   const TolerancePolicy& policy = TolerancePolicy::defaults());

// Runs the method on `candidate` and compares it with a recorded trace of the same
// configuration (`setup` must hold the trace's prompt and sampling; the caller checks the model
// fingerprints). Hidden states and draft LM logits are not in traces and are not compared;
// near-ties need full logits rows in the trace (greedy also works with top-k rows, k >= 2).
// A trace of another exactness contract (or none) is refused (check_exactness_contract).
ValidationReport validate_against_trace(const ValidationSetup& setup, const Backend& candidate, const Trace& reference,
                                        const std::string& reference_name,
                                        const TolerancePolicy& policy = TolerancePolicy::defaults());

// The other way round, for outside engines: `candidate` is an engine's recorded trace, and the
// method runs live on `reference` under the trace's configuration (`setup` must hold its
// prompt, sampling and options). Margins and near-ties come from the reference's own rows; on a
// near-tie the reference is given the candidate's rows at that step so that the two stay
// aligned. A draft-free method's drafts (setup.make_rule_proposer) must be its rule's for the
// recorded history at every step ("draft rule" failures). A draft that differs fails (the trace records no drafter inputs to excuse it); with
// `force_drafts` every step's draft (tree and q) is the candidate's, so that its target forward
// and acceptance are checked exactly whatever drafted them. The trace's exactness contract is not
// checked: an outside engine's numbers are held to the tolerance policy, not compared bitwise.
ValidationReport validate_candidate_trace(const ValidationSetup& setup, const Backend& reference, const Trace& candidate,
                                          const std::string& candidate_name, bool force_drafts,
                                          const TolerancePolicy& policy = TolerancePolicy::defaults());

// A proposer that proposes, step by step, what `trace` recorded (for forcing the drafts of a
// candidate whose drafter specdec does not have). Throws if a sampled draft's q rows are top-k.
std::unique_ptr<Proposer> make_trace_proposer(const Trace& trace, const std::string& name);

}  // namespace specdec::validation
