// The run driver of specdec validate: runs the live side, compares it step by step with the
// recorded side (step_comparison.hpp), reruns it after each near-tie with the recorded side's
// logits or draft forced at that step (forcing.hpp), and writes the report, where the two sides
// get their reference / candidate names (sides.hpp).
#include "validation/validator.hpp"

#include <algorithm>

#include "validation/forcing.hpp"
#include "validation/live_run.hpp"
#include "validation/quantity_stats.hpp"
#include "validation/sides.hpp"
#include "validation/step_comparison.hpp"
#include "reference/core/error.hpp"

namespace specdec::validation {

namespace {

ValidationReport run_validation(const ValidationSetup& setup, const Backend& live_backend, const Recorded& recorded, Roles roles,
                                const TolerancePolicy& policy, bool force_drafts = false) {
  ValidationReport report;
  report.reference = roles.reference(live_backend.name, recorded.name);
  report.candidate = roles.candidate(live_backend.name, recorded.name);
  report.policy = policy;
  report.method = setup.method;
  report.reference_steps = static_cast<int>(recorded.trace->steps.size());
  Forcing forcing;
  if (force_drafts) force_recorded_drafts(*recorded.trace, recorded.name, forcing);
  QuantityStats stats;
  // An outside engine's trace (validate --candidate) is checked further against the live
  // reference: its per-layer states localise a failure, its drafter rows excuse a changed draft.
  const bool layer_states = roles.live_is_reference && recorded.trace->target_layers.num_layers > 0;
  const bool drafter_rows = roles.live_is_reference && recorded.trace->drafter_io.present;
  for (;;) {
    const LiveRun live = run_live(setup, live_backend, forcing, layer_states, drafter_rows);
    ++report.candidate_runs;
    StepComparer comparer(setup, policy, live, recorded, roles, forcing, stats);
    const int n = static_cast<int>(std::min(live.run.trace.steps.size(), recorded.trace->steps.size()));
    StepOutcome out;
    int s = 0;
    for (; s < n; ++s) {
      out = comparer.compare(s);
      if (out.kind != StepOutcome::Kind::equal) break;
    }
    report.steps_compared = s;
    if (out.kind == StepOutcome::Kind::near_tie) {
      report.near_ties.push_back(out.tie);
      if (static_cast<int>(report.near_ties.size()) > policy.max_near_ties) {
        Divergence d;
        d.step = s;
        d.position = out.tie.position;
        d.what = "near-ties";
        d.value = static_cast<double>(report.near_ties.size());
        d.bound = policy.max_near_ties;
        d.detail = std::to_string(report.near_ties.size()) + " near-ties, more than the " + std::to_string(policy.max_near_ties) +
                   " rounding can explain: the backend differs systematically";
        report.failure = d;
        break;
      }
      // Rerun with the recorded side's draft or target logits at step s.
      if (out.force_draft) {
        std::optional<Proposal> p = recorded_proposal(recorded, s);
        if (!p) {
          Divergence d;
          d.step = s;
          d.position = out.tie.position;
          d.what = "draft";
          d.detail = "the drafts differ (reference " + out.tie.reference + ", candidate " + out.tie.candidate +
                     ") and the trace keeps the draft distributions as top-k, so the reference's draft cannot be forced";
          report.failure = d;
          break;
        }
        forcing.drafts[s] = std::move(*p);
      } else {
        forcing.logits[s] = forced_logits(recorded.trace->steps[static_cast<size_t>(s)], live.run.trace.steps[static_cast<size_t>(s)]);
      }
      continue;
    }
    if (out.kind == StepOutcome::Kind::fail) {
      report.failure = out.failure;
      break;
    }
    const Trace& lt = live.run.trace;
    const Trace& rt = *recorded.trace;
    if (lt.steps.size() != rt.steps.size()) {
      Divergence d;
      d.step = n;
      d.what = "steps";
      d.detail = "the candidate ran " + std::to_string(roles.candidate(lt.steps.size(), rt.steps.size())) + " steps, the reference " +
                 std::to_string(roles.reference(lt.steps.size(), rt.steps.size()));
      report.failure = d;
    } else if (lt.output != rt.output || lt.stop_reason != rt.stop_reason) {
      Divergence d;
      d.what = "steps";
      d.detail = "the outputs differ (" + std::to_string(lt.output.size()) + " tokens, stop " + lt.stop_reason + " vs " +
                 std::to_string(rt.output.size()) + " tokens, stop " + rt.stop_reason + ")";
      report.failure = d;
    }
    break;
  }
  for (int s = 0; s < report.steps_compared; ++s)
    report.tokens_compared += static_cast<int>(recorded.trace->steps[static_cast<size_t>(s)].emitted_tokens.size());
  report.coverage = decision_coverage(recorded.trace->steps, report.steps_compared,
                                     setup.sampling.mode == SamplingParams::Mode::sample);
  report.quantities = stats.summary(policy);
  if (drafter_rows) {
    report.drafter_rows = stats.drafter_rows();
    for (const StepRecord& step : recorded.trace->steps) report.drafter_rows.recorded += static_cast<long>(step.drafter_tokens.size());
    // Rows were recorded and the steps compared, but none had a counterpart: nothing was validated.
    if (!report.failure) report.failure = all_passed_over(report.drafter_rows);
  }
  report.passed = !report.failure.has_value();
  return report;
}

}  // namespace

ValidationReport validate_candidate_trace(const ValidationSetup& setup, const Backend& reference, const Trace& candidate,
                                          const std::string& candidate_name, bool force_drafts, const TolerancePolicy& policy) {
  if (setup.prompt != candidate.prompt) throw Error("validation: the run's prompt is not the candidate trace's (" + candidate_name + ")");
  if (candidate.steps.empty()) throw Error(candidate_name + " records no steps; there is nothing to validate");
  // No exactness-contract check: an outside engine computes as it computes, and its numbers are
  // held to the tolerance policy, never compared bit for bit.
  Recorded recorded;
  recorded.trace = &candidate;
  recorded.name = candidate_name;
  // A draft-free method: the drafts are a function of the history, checked against the rule at
  // every step (before the live run's own drafts, and also when the candidate's drafts are forced).
  std::vector<RuleStep> rule;
  if (setup.make_rule_proposer) {
    rule = rule_drafts(candidate, setup.make_rule_proposer, setup.make_rule_policy, setup.options, setup.sampling);
    recorded.rule = &rule;
  }
  return run_validation(setup, reference, recorded, Roles{.live_is_reference = true}, policy, force_drafts);
}

ValidationReport validate_backends(const ValidationSetup& setup, const Backend& candidate, const Backend& reference,
                                   const TolerancePolicy& policy) {
  const LiveRun reference_run = run_live(setup, reference, Forcing{});
  Recorded recorded;
  recorded.trace = &reference_run.run.trace;
  recorded.name = reference.name;
  recorded.extras = &reference_run.run.extras;
  recorded.target_forwards = &reference_run.target_forwards;
  recorded.draft_forwards = reference.draft_lm ? &reference_run.draft_forwards : nullptr;
  return run_validation(setup, candidate, recorded, Roles{.live_is_reference = false}, policy);
}

ValidationReport validate_against_trace(const ValidationSetup& setup, const Backend& candidate, const Trace& reference,
                                        const std::string& reference_name, const TolerancePolicy& policy) {
  if (setup.prompt != reference.prompt) throw Error("validation: the run's prompt is not the trace's (" + reference_name + ")");
  if (reference.steps.empty()) throw Error(reference_name + " records no steps; there is nothing to validate against");
  check_exactness_contract(reference, reference_name);
  Recorded recorded;
  recorded.trace = &reference;
  recorded.name = reference_name;
  return run_validation(setup, candidate, recorded, Roles{.live_is_reference = false}, policy);
}

}  // namespace specdec::validation
