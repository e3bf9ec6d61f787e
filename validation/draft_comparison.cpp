// One step of the live run against the recorded side: the draft side. The draft LM's forwards,
// an outside engine's recorded drafter rows against the live drafter's, a draft that differs
// (a drafter near-tie, or a failure), and the sampled draft distributions q.
#include <algorithm>
#include <cmath>

#include "validation/drafter_rows.hpp"
#include "validation/row_comparison.hpp"
#include "validation/step_comparison.hpp"
#include "validation/step_replay.hpp"
#include "reference/core/format.hpp"

namespace specdec::validation {

namespace {

std::string g(double v) { return format_brief(v); }

// A drafter's margin at node `node` of a greedy chain, from its own rows: node j is drafted from
// the step's j-th drafter row with logits, and the margin is that row's logit gap between the
// drafter's own token (its top choice) and the other side's, by draft ids. Unknown when the row
// is missing, either id is outside the drafter's vocabulary or its own token is not the top.
double chain_draft_margin(const std::vector<DrafterRow>& own_rows, size_t node, int own_id, int other_id) {
  size_t with_logits = 0;
  for (const DrafterRow& row : own_rows) {
    if (!row.logits || with_logits++ != node) continue;
    if (own_id < 0 || other_id < 0 || own_id >= row.vocab || other_id >= row.vocab) return kUnknown;
    if (std::max_element(row.logits, row.logits + row.vocab) - row.logits != own_id) return kUnknown;
    return static_cast<double>(row.logits[own_id]) - static_cast<double>(row.logits[other_id]);
  }
  return kUnknown;
}

// A target id in the drafter's output vocabulary: its draft id, -1 outside it; the id itself
// without a head (a draft LM shares the target's vocabulary).
int draft_id(const EagleHead* head, int32_t target_id) {
  if (!head) return target_id;
  for (int d = 0; d < head->config().draft_vocab; ++d)
    if (head->to_target(d) == target_id) return d;
  return -1;
}

}  // namespace

// validate --candidate of a draft-free method: the candidate's drafts at step s against what the
// method's rule drafts for the recorded history (the prompt and the tokens emitted before step s).
std::optional<StepOutcome> StepComparer::compare_draft_rule(int s, const StepRecord& rec) {
  if (!recorded_.rule || static_cast<size_t>(s) >= recorded_.rule->size()) return std::nullopt;
  const RuleStep& rule = (*recorded_.rule)[static_cast<size_t>(s)];
  const std::optional<size_t> node = first_rule_difference(rule.proposal, rec);
  if (!node) return std::nullopt;
  const RuleMatch m = rule_match(rule.proposal);
  DraftRuleMismatch r;
  r.method = setup_.method;
  r.rule_tokens = rule.proposal.tree.tokens;
  r.rule_parents = rule.proposal.tree.parents;
  r.candidate_tokens = rec.draft_tokens;
  r.candidate_parents = rec.draft_parents;
  r.node = static_cast<int>(*node);
  r.history = rule.history;
  r.match_length = m.match_length;
  r.match_position = m.match_position;
  r.copied_from = m.copied_from;
  r.request = m.from_responses ? m.request : -1;
  if (!rec.draft_sources.empty()) {
    r.candidate_copied_from = rec.draft_sources.front().position;
    r.candidate_match_length = rec.draft_sources.front().match_length;
  }
  Divergence d = base_;
  d.what = "draft rule";
  d.reference_token = *node < r.rule_tokens.size() ? r.rule_tokens[*node] : -1;
  d.candidate_token = *node < r.candidate_tokens.size() ? r.candidate_tokens[*node] : -1;
  const std::vector<int32_t> history = history_before(*recorded_.trace, static_cast<size_t>(s));
  std::string said;
  if (!rec.draft_sources.empty()) {
    const DraftSourceRecord& own = rec.draft_sources.front();
    said = "; the candidate's trace says it copied from position " + std::to_string(r.candidate_copied_from) +
           (own.origin == DraftSourceRecord::Origin::responses ? " of the response of request " + std::to_string(own.request) : "") +
           " after a match of " + std::to_string(r.candidate_match_length) + " tokens";
  }
  d.detail = "the candidate's drafts are not " + setup_.method + "'s rule for the history before step " + std::to_string(s) + " (" +
             std::to_string(rule.history) + " tokens: the prompt and the tokens emitted so far): candidate drafted " +
             draft_list(r.candidate_tokens, r.candidate_parents) + ", the rule drafts " + draft_list(r.rule_tokens, r.rule_parents) +
             " (first difference at node " + std::to_string(*node) + "); " + describe_rule(rule, history) + said;
  d.draft_rule = std::move(r);
  return fail_with(d);
}

// Drafter forwards of step s (validate --against with a draft LM): logits within tolerance while
// the two drafters were given the same input.
std::optional<StepOutcome> StepComparer::compare_draft_forwards(int s) {
  if (!recorded_.draft_forwards) return std::nullopt;
  std::vector<const ForwardRecord*> a, b;
  for (const ForwardRecord& f : live_.draft_forwards)
    if (f.step == s) a.push_back(&f);
  for (const ForwardRecord& f : *recorded_.draft_forwards)
    if (f.step == s) b.push_back(&f);
  for (size_t j = 0; j < a.size() && j < b.size(); ++j) {
    if (!a[j]->same_request(*b[j])) break;
    if (a[j]->logits.rows() != b[j]->logits.rows() || a[j]->logits.cols() != b[j]->logits.cols()) break;
    for (Eigen::Index i = 0; i < a[j]->logits.rows(); ++i) {
      const RowDifference d = compare_rows(a[j]->logits.row(i).data(), b[j]->logits.row(i).data(), static_cast<int>(a[j]->logits.cols()));
      const std::string where = "step " + std::to_string(s) + " drafter forward " + std::to_string(j);
      stats_.add("draft LM logits", s, d.nmse, where);
      if (!(d.nmse <= policy_.logits_nmse)) {
        Divergence f = base_;
        f.what = "draft LM logits";
        f.value = d.nmse;
        f.bound = policy_.logits_nmse;
        f.logit_error = d.max_abs;
        f.detail = where + ": NMSE " + g(d.nmse) + " exceeds the bound " + g(policy_.logits_nmse);
        return fail_with(f);
      }
    }
  }
  return std::nullopt;
}

// validate --candidate, with a trace that records its drafter's rows (traces/SCHEMA.md, "Drafter
// inputs and outputs"), at a step whose draft was not forced: the recorded rows (the candidate's)
// against the live reference's. Rows out of tolerance fail, naming the row, its forward and what
// departed (the inputs: another engine fed its drafter other target states, tokens or positions;
// the outputs: its drafter computes differently). When every row agrees, drafter_rows_agree_ is
// set: a differing draft is then a drafter near-tie, not a bug.
std::optional<StepOutcome> StepComparer::compare_drafter_rows_of(int s, const StepRecord& live, const StepRecord& rec, bool drafts_differ) {
  drafter_rows_agree_ = false;
  drafter_margin_ = kUnknown;
  if (!roles_.live_is_reference || !recorded_.trace->drafter_io.present || forcing_.drafts.count(s)) return std::nullopt;
  const std::vector<DrafterRow> recorded_rows = trace_drafter_rows(*recorded_.trace, rec);
  if (recorded_rows.empty()) return std::nullopt;
  const std::vector<DrafterRow> live_rows = live_drafter_rows(s, live_.head_forwards, live_.draft_forwards);
  // The recorded side's drafted tokens from the first node where the drafts differ.
  const size_t n = first_differing_node(live, rec);
  const std::vector<int32_t> diverged(rec.draft_tokens.begin() + static_cast<std::ptrdiff_t>(n), rec.draft_tokens.end());
  const DrafterComparison cmp = compare_drafter_rows(recorded_rows, live_rows, policy_, drafts_differ ? &diverged : nullptr,
                                                     [&](const std::string& q, double v, const std::string& at) {
                                                       stats_.add(q, s, v, "step " + std::to_string(s) + " " + at);
                                                     });
  DrafterRowCounts counts;
  counts.compared = cmp.rows_compared;
  counts.passed = cmp.rows_passed;
  counts.passed_over = cmp.unpaired;
  stats_.drafter_rows(s, counts);
  if (cmp.mismatch) {
    const DrafterMismatch& m = *cmp.mismatch;
    Divergence d = base_;
    d.what = m.what;
    d.row = m.row;
    d.drafter_call = m.call;
    if (m.position >= 0) d.position = static_cast<int32_t>(m.position);
    d.value = m.value;
    d.bound = m.bound;
    d.detail = m.detail;
    return fail_with(d);
  }
  drafter_rows_agree_ = true;
  // Greedy chains (EAGLE, P-EAGLE): the live drafter's own margin at the node (unknown for trees
  // and sampled drafts, where ranks and draws decide).
  bool chain = true;
  for (size_t i = 0; i < live.draft_parents.size(); ++i) chain = chain && live.draft_parents[i] == static_cast<int32_t>(i) - 1;
  if (drafts_differ && chain && setup_.sampling.mode == SamplingParams::Mode::greedy && n < live.draft_tokens.size() &&
      n < rec.draft_tokens.size())
    drafter_margin_ = chain_draft_margin(live_rows, n, draft_id(live_.head, live.draft_tokens[n]), draft_id(live_.head, rec.draft_tokens[n]));
  return std::nullopt;
}

// The drafts differ at step s. validate --against and --trace: a drafter near-tie (the recorded
// draft is forced), unless it was forced already. validate --candidate: a drafter near-tie only
// where the trace's drafter rows agree with the live drafter's and the live drafter's margin does
// not rule it out; without the rows, a failure.
StepOutcome StepComparer::draft_divergence(int s, const StepRecord& live, const StepRecord& rec) {
  const size_t n = first_differing_node(live, rec);
  auto describe = [&](const StepRecord& x) {
    if (n >= x.draft_tokens.size()) return "no node " + std::to_string(n) + " (" + std::to_string(x.draft_tokens.size()) + " drafted)";
    return "node " + std::to_string(n) + " = token " + std::to_string(x.draft_tokens[n]) + " under parent " + std::to_string(x.draft_parents[n]);
  };
  const int32_t live_token = n < live.draft_tokens.size() ? live.draft_tokens[n] : -1;
  const int32_t recorded_token = n < rec.draft_tokens.size() ? rec.draft_tokens[n] : -1;
  NearTie t;
  t.step = s;
  t.position = static_cast<int32_t>(rec.position);
  if (n < rec.draft_tokens.size()) {
    const DraftTree tree{rec.draft_tokens, rec.draft_parents};
    t.position += tree.depth(static_cast<int>(n)) - 1;
  }
  t.kind = "draft";
  t.reference_token = roles_.reference(live_token, recorded_token);
  t.candidate_token = roles_.candidate(live_token, recorded_token);
  t.reference = roles_.reference(describe(live), describe(rec));
  t.candidate = roles_.candidate(describe(live), describe(rec));
  if (roles_.live_is_reference && drafter_rows_agree_) {
    // The drafter was given the same inputs and returned the same outputs within tolerance: the
    // draft token differs where the drafter's decision is close, unless its margin says not.
    t.margin = drafter_margin_;
    t.margin_units = std::isnan(drafter_margin_) ? "" : "logit";
    if (!std::isnan(drafter_margin_) && !(drafter_margin_ < policy_.near_tie_logit_margin)) {
      Divergence d = base_;
      d.what = "draft";
      d.position = t.position;
      d.reference_token = t.reference_token;
      d.candidate_token = t.candidate_token;
      d.margin = drafter_margin_;
      d.margin_units = "logit";
      d.detail = "the drafts differ: reference " + t.reference + ", candidate " + t.candidate +
                 "; the drafter's inputs and outputs agree within tolerance, but the reference drafter's margin " + g(drafter_margin_) +
                 " is not below the near-tie threshold " + g(policy_.near_tie_logit_margin) + " (the candidate chose its draft wrongly)";
      return fail_with(d);
    }
    return near_tie(t, true);
  }
  if (roles_.live_is_reference) {
    // Without the drafter's rows, a changed draft cannot be told from a drafter bug with
    // self-consistent logits: it fails, unless the drafts are forced.
    Divergence d = base_;
    d.what = "draft";
    d.position = t.position;
    d.reference_token = t.reference_token;
    d.candidate_token = t.candidate_token;
    d.detail = "the drafts differ: reference " + t.reference + ", candidate " + t.candidate +
               "; a changed draft is not excused as a near-tie unless the trace records the drafter's inputs and outputs "
               "(give --force-drafts when the candidate's drafter is not the reference's)";
    return fail_with(d);
  }
  if (forcing_.drafts.count(s)) {
    Divergence d = base_;
    d.what = "draft";
    d.reference_token = t.reference_token;
    d.candidate_token = t.candidate_token;
    d.detail = "the drafts differ although the reference's draft was forced at this step: reference " + t.reference + ", candidate " + t.candidate;
    return fail_with(d);
  }
  return near_tie(t, true);
}

// The sampled draft distributions q of step s: the live run's exact rows against the recorded
// side's (exact from the reference backend's run, read back from a trace's log q rows).
std::optional<StepOutcome> StepComparer::compare_draft_probs(int s, const StepRecord&, const StepRecord& rec) {
  const std::vector<std::vector<double>>& lq = live_.run.extras[static_cast<size_t>(s)].draft_probs;
  std::optional<std::vector<std::vector<double>>> rq;
  if (recorded_.extras) rq = (*recorded_.extras)[static_cast<size_t>(s)].draft_probs;
  else rq = recorded_draft_probs(rec);
  if (!rq) return std::nullopt;  // a trace with top-k draft rows: nothing exact to compare
  if (lq.empty() != rq->empty() || (!lq.empty() && lq.size() != rq->size())) {
    return fail("draft distributions", "the candidate drafted with " + std::to_string(roles_.candidate(lq.size(), rq->size())) +
                                           " sampled distributions, the reference with " + std::to_string(roles_.reference(lq.size(), rq->size())));
  }
  for (size_t k = 0; k < lq.size(); ++k) {
    if (lq[k].empty() || (*rq)[k].empty()) continue;
    if (lq[k].size() != (*rq)[k].size()) return fail("draft distributions", "q row sizes differ at node " + std::to_string(static_cast<int>(k) - 1));
    double worst = 0;
    for (size_t v = 0; v < lq[k].size(); ++v) worst = std::max(worst, std::abs(lq[k][v] - (*rq)[k][v]));
    const std::string where = "step " + std::to_string(s) + " node " + std::to_string(static_cast<int>(k) - 1);
    stats_.add("draft distributions q", s, worst, where);
    if (!(worst <= policy_.draft_probability_abs)) {
      Divergence d = base_;
      d.what = "draft distributions";
      d.value = worst;
      d.bound = policy_.draft_probability_abs;
      d.detail = where + ": max |Δq| " + g(worst) + " exceeds the bound " + g(policy_.draft_probability_abs);
      return fail_with(d);
    }
  }
  return std::nullopt;
}

}  // namespace specdec::validation
