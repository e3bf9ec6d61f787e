// One step of the live run against the recorded side: the step order and the target side (target
// logits rows, token decisions, hidden states, the exact step fields, localisation). The draft
// side is in draft_comparison.cpp.
#include "validation/step_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "validation/drafter_rows.hpp"
#include "validation/layer_departure.hpp"
#include "validation/row_comparison.hpp"
#include "validation/step_replay.hpp"
#include "reference/core/format.hpp"
#include "traces/trace_compare.hpp"

namespace specdec::validation {

namespace {

std::string at_row(int step, int row) { return "step " + std::to_string(step) + " row " + std::to_string(row); }

std::string g(double v) { return format_brief(v); }

}  // namespace

StepOutcome StepComparer::compare(int s) {
  StepOutcome out = compare_step(s);
  // Drafter failures are localised by their drafter row; the target forward that follows a
  // differing draft differs for that reason alone.
  const bool drafter = out.failure.what == "draft" || out.failure.what.rfind("drafter", 0) == 0;
  if (out.kind == StepOutcome::Kind::fail && out.failure.step == s && !drafter) localise(s, out.failure);
  return out;
}

StepOutcome StepComparer::compare_step(int s) {
  using Id = StepFieldId;
  const StepRecord& live = live_.run.trace.steps[static_cast<size_t>(s)];
  const StepRecord& rec = recorded_.trace->steps[static_cast<size_t>(s)];
  const bool logits_forced = forcing_.logits.count(s) > 0;
  stats_.clear_step(s, logits_forced);
  base_ = Divergence{};
  base_.step = s;
  base_.position = static_cast<int32_t>(rec.position);
  base_.reference_emitted = roles_.reference(live.emitted_tokens, rec.emitted_tokens);
  base_.candidate_emitted = roles_.candidate(live.emitted_tokens, rec.emitted_tokens);
  if (!same_field(step_field(Id::position), live, rec)) {
    return fail("step field", "position " + std::to_string(roles_.candidate(live.position, rec.position)) + " vs the reference's " +
                                  std::to_string(roles_.reference(live.position, rec.position)));
  }

  if (auto f = compare_draft_rule(s, rec)) return *f;
  if (auto f = compare_draft_forwards(s)) return *f;
  const bool drafts_differ = first_differing_field({Id::draft_tokens, Id::draft_parents}, live, rec) != nullptr;
  if (auto f = compare_drafter_rows_of(s, live, rec, drafts_differ)) return *f;
  if (drafts_differ) return draft_divergence(s, live, rec);
  if (auto f = compare_draft_probs(s, live, rec)) return *f;

  // Target logits, row by row (not at a step whose rows were forced: they are the recorded side's).
  std::vector<double> row_error;
  std::optional<Divergence> tolerance;
  if (auto f = compare_target_logits(s, live, rec, logits_forced, row_error, tolerance)) return *f;

  // Token decisions, in evaluation order.
  const std::vector<Decision>& ld = live_.run.extras[static_cast<size_t>(s)].decisions;
  std::optional<std::vector<Decision>> rd;
  if (recorded_.extras) rd = (*recorded_.extras)[static_cast<size_t>(s)].decisions;
  else rd = recorded_step_decisions(rec, setup_.sampling, setup_.options.sequence);
  if (rd) {
    size_t i = 0;
    while (i < ld.size() && i < rd->size() && ld[i].same_outcome((*rd)[i])) ++i;
    if (i < ld.size() || i < rd->size()) return decision_divergence(s, live, rec, ld, *rd, i, row_error, tolerance, logits_forced);
  }
  if (tolerance) return fail_with(*tolerance);

  if (auto f = compare_hidden(s)) return *f;
  return compare_fields(s, live, rec);
}

// The live rows against the recorded rows, in full or against a recorded top-k summary. A row out
// of tolerance is kept in `tolerance` (the decisions are compared first: a differing decision
// names it); `row_error` receives each row's max |Δ logit|.
std::optional<StepOutcome> StepComparer::compare_target_logits(int s, const StepRecord& live, const StepRecord& rec, bool logits_forced,
                                                               std::vector<double>& row_error, std::optional<Divergence>& tolerance) {
  if (live.target_logits.size() != rec.target_logits.size() && !rec.target_logits.empty()) {
    return fail("step field", std::to_string(roles_.candidate(live.target_logits.size(), rec.target_logits.size())) +
                                  " target logits rows vs the reference's " +
                                  std::to_string(roles_.reference(live.target_logits.size(), rec.target_logits.size())));
  }
  row_error.assign(live.target_logits.size(), kUnknown);
  if (logits_forced) return std::nullopt;
  for (size_t j = 0; j < rec.target_logits.size(); ++j) {
    const std::vector<float>& lr = live.target_logits[j].full;
    const int row = static_cast<int>(j);
    if (rec.target_logits[j].is_full()) {
      const RowDifference d = compare_rows(lr.data(), rec.target_logits[j].full.data(), static_cast<int>(lr.size()));
      row_error[j] = d.max_abs;
      stats_.add("target logits", s, d.nmse, at_row(s, row));
      if (!tolerance && !(d.nmse <= policy_.logits_nmse)) tolerance = tolerance_failure("target logits", row, d.nmse, policy_.logits_nmse, "NMSE");
    } else {
      const SummaryDifference d = compare_to_summary(lr.data(), static_cast<int>(lr.size()), rec.target_logits[j].summary);
      row_error[j] = d.topk.max_abs;
      stats_.add("target logits (top-k)", s, d.topk.nmse, at_row(s, row));
      stats_.add("top-k membership", s, d.outside_excess, at_row(s, row));
      stats_.add("logsumexp", s, d.logsumexp_abs, at_row(s, row));
      if (!tolerance && !(d.topk.nmse <= policy_.logits_nmse))
        tolerance = tolerance_failure("target logits", row, d.topk.nmse, policy_.logits_nmse, "NMSE over the recorded top-k");
      if (!tolerance && !(d.outside_excess <= policy_.near_tie_logit_margin))
        tolerance = tolerance_failure("target logits", row, d.outside_excess, policy_.near_tie_logit_margin,
                                      "a logit outside the recorded top-k exceeds the k-th value by");
      if (!tolerance && !(d.logsumexp_abs <= policy_.logsumexp_abs))
        tolerance = tolerance_failure("target logits", row, d.logsumexp_abs, policy_.logsumexp_abs, "|Δ logsumexp|");
    }
  }
  return std::nullopt;
}

StepOutcome StepComparer::decision_divergence(int s, const StepRecord& live, const StepRecord& rec, const std::vector<Decision>& ld,
                                              const std::vector<Decision>& rd, size_t i, const std::vector<double>& row_error,
                                              const std::optional<Divergence>& tolerance, bool logits_forced) {
  const Decision* a = i < ld.size() ? &ld[i] : nullptr;  // the live run's
  const Decision* b = i < rd.size() ? &rd[i] : nullptr;  // the recorded side's
  const Decision& any = b ? *b : *a;
  // The two tokens: those chosen or drawn; after an acceptance test, those the runs emitted
  // at the tested position (the node's token if accepted, else what came instead).
  const size_t k = static_cast<size_t>(std::max<int64_t>(0, any.position - rec.position));
  auto token = [&](const Decision* x, const StepRecord& step) -> int32_t {
    if (x && x->kind != DecisionKind::test) return x->token;
    if (k < step.emitted_tokens.size()) return step.emitted_tokens[k];
    return x ? x->token : -1;
  };
  const Decision* reference_decision = roles_.reference(a, b);
  const Decision* candidate_decision = roles_.candidate(a, b);
  const int32_t ref_token = roles_.reference(token(a, live), token(b, rec));
  const int32_t cand_token = roles_.candidate(token(a, live), token(b, rec));
  const double margin = reference_decision ? reference_decision->margin : kUnknown;
  const bool choice = any.kind == DecisionKind::choice;
  const double threshold = choice ? policy_.near_tie_logit_margin : policy_.near_tie_probability_margin;
  const double error = any.row >= 0 && static_cast<size_t>(any.row) < row_error.size() ? row_error[static_cast<size_t>(any.row)] : kUnknown;
  const bool excusable = a && b && a->kind == b->kind && a->row == b->row && !std::isnan(margin) && margin < threshold && !tolerance;
  if (excusable && !logits_forced) {
    NearTie t;
    t.step = s;
    t.position = b->position;
    t.kind = to_string(b->kind);
    t.row = b->row;
    t.reference_token = ref_token;
    t.candidate_token = cand_token;
    t.reference = reference_decision->describe();
    t.candidate = candidate_decision->describe();
    t.margin = margin;
    t.margin_units = choice ? "logit" : "probability";
    t.logit_error = error;
    return near_tie(t, false);
  }
  Divergence d = tolerance ? *tolerance : base_;
  d.what = "token";
  d.position = any.position;
  d.row = any.row;
  d.reference_token = ref_token;
  d.candidate_token = cand_token;
  d.margin = margin;
  d.margin_units = choice ? "logit" : "probability";
  d.logit_error = error;
  std::string why;
  if (logits_forced) why = "the decision differs although the reference's logits were forced at this step";
  else if (tolerance) why = "the logits are out of tolerance (" + tolerance->detail + ")";
  else if (std::isnan(margin)) why = "the reference's margin is unknown (the trace keeps top-k logits; record with --logits full)";
  else why = "the reference's margin " + g(margin) + " is not below the near-tie threshold " + g(threshold);
  d.detail = "reference " + (reference_decision ? reference_decision->describe() : std::string("made no such decision")) +
             "; candidate " + (candidate_decision ? candidate_decision->describe() : std::string("made no such decision")) + "; " + why;
  return fail_with(d);
}

// Final and auxiliary hidden states of step s's target forward (the reference backend's run
// keeps its forwards) while both forwards were given the same input.
std::optional<StepOutcome> StepComparer::compare_hidden(int s) {
  if (!recorded_.target_forwards) return std::nullopt;
  const size_t i = static_cast<size_t>(s);
  if (i >= live_.target_forwards.size() || i >= recorded_.target_forwards->size()) return std::nullopt;
  const ForwardRecord& a = live_.target_forwards[i];
  const ForwardRecord& b = (*recorded_.target_forwards)[i];
  if (!a.same_request(b)) return std::nullopt;
  for (const auto& [name, x, y] : {std::tuple<const char*, const Matrix*, const Matrix*>{"final", &a.final_hidden, &b.final_hidden},
                                   std::tuple<const char*, const Matrix*, const Matrix*>{"aux", &a.aux_hidden, &b.aux_hidden}}) {
    if (x->rows() != y->rows() || x->cols() != y->cols()) {
      const Matrix* c = roles_.candidate(x, y);
      const Matrix* r = roles_.reference(x, y);
      return fail("hidden states", std::string(name) + " hidden states have shape (" + std::to_string(c->rows()) + ", " +
                                       std::to_string(c->cols()) + ") vs the reference's (" + std::to_string(r->rows()) + ", " +
                                       std::to_string(r->cols()) + ")");
    }
    for (Eigen::Index r = 0; r < x->rows(); ++r) {
      const RowDifference d = compare_rows(x->row(r).data(), y->row(r).data(), static_cast<int>(x->cols()));
      const std::string where = "step " + std::to_string(s) + " " + name + " row " + std::to_string(r);
      stats_.add("hidden states", s, d.nmse, where);
      if (!(d.nmse <= policy_.hidden_nmse)) {
        Divergence f = base_;
        f.what = "hidden states";
        f.row = static_cast<int>(r);
        f.value = d.nmse;
        f.bound = policy_.hidden_nmse;
        f.detail = where + ": NMSE " + g(d.nmse) + " exceeds the bound " + g(policy_.hidden_nmse);
        return fail_with(f);
      }
    }
  }
  return std::nullopt;
}

// The remaining exact step fields (traces/trace_compare.hpp), in this order.
StepOutcome StepComparer::compare_fields(int s, const StepRecord& live, const StepRecord& rec) {
  using Id = StepFieldId;
  const StepField* f = first_differing_field({Id::emitted_tokens, Id::accepted_path, Id::accept_decisions, Id::accept_nodes,
                                              Id::accept_uniforms, Id::bonus_token, Id::random_counters},
                                             live, rec);
  if (!f) return StepOutcome{};
  const StepRecord& ref = *roles_.reference(&live, &rec);
  const StepRecord& cand = *roles_.candidate(&live, &rec);
  Divergence d = base_;
  d.what = "step field";
  d.detail = std::string(f->name) + ": candidate " + brief_value(*f, cand) + ", reference " + brief_value(*f, ref);
  if (f->id == Id::emitted_tokens) {
    // The position of the first emitted token that differs.
    std::size_t k = 0;
    while (k < live.emitted_tokens.size() && k < rec.emitted_tokens.size() && live.emitted_tokens[k] == rec.emitted_tokens[k]) ++k;
    d.position = static_cast<int32_t>(rec.position + static_cast<int64_t>(k));
    d.reference_token = k < ref.emitted_tokens.size() ? ref.emitted_tokens[k] : -1;
    d.candidate_token = k < cand.emitted_tokens.size() ? cand.emitted_tokens[k] : -1;
    // The token after the accepted path is the draft the candidate had just rejected there: its
    // rule after a rejection is wrong, whatever its logits (in sample mode the rejected token has
    // no residual mass: the test rejects x only where p(x) < q(x)).
    const int32_t last = ref.accepted_path.empty() ? -1 : ref.accepted_path.back();
    if (k == ref.accepted_path.size() && d.candidate_token >= 0) {
      for (std::size_t node = 0; node < ref.draft_tokens.size() && node < ref.draft_parents.size(); ++node) {
        const auto judged = std::find(ref.accept_nodes.begin(), ref.accept_nodes.end(), static_cast<int32_t>(node));
        const auto at = static_cast<std::size_t>(judged - ref.accept_nodes.begin());
        const bool rejected = judged == ref.accept_nodes.end() || (at < ref.accept_decisions.size() && ref.accept_decisions[at] == 0);
        if (ref.draft_parents[node] != last || ref.draft_tokens[node] != d.candidate_token || !rejected) continue;
        d.detail += "; the candidate emitted token " + std::to_string(d.candidate_token) + ", the draft it had just rejected there" +
                    (setup_.sampling.mode == SamplingParams::Mode::sample
                         ? ", which has zero residual mass (max(0, p - q) is 0 wherever the test rejects)"
                         : "") +
                    ": its rule for the token after a rejection is wrong";
        break;
      }
    }
    // The reference's own decision of that token, with its margin: a candidate whose logits
    // and draws agree but whose rule is wrong (a residual, a bonus) differs only here.
    if (const std::vector<Decision>* own = reference_decisions(s)) {
      for (const Decision& x : *own) {
        if (x.position != d.position) continue;
        d.row = x.row;
        d.margin = x.margin;
        d.margin_units = x.kind == DecisionKind::choice ? "logit" : "probability";
        d.detail += "; the reference's decision there: " + x.describe();
      }
    }
  }
  return fail_with(d);
}

const std::vector<Decision>* StepComparer::reference_decisions(int s) const {
  const std::size_t step = static_cast<std::size_t>(s);
  if (roles_.live_is_reference) return &live_.run.extras[step].decisions;
  return recorded_.extras ? &(*recorded_.extras)[step].decisions : nullptr;
}

// validate --candidate, with a trace that records its per-layer target states: the first layer
// and sub-step of step s's target forward, in forward order, whose state (at any recorded row) is
// beyond the hidden-state bound against the live reference's.
void StepComparer::localise(int s, Divergence& d) const {
  if (!roles_.live_is_reference) return;
  if (static_cast<size_t>(s) >= live_.target_forwards.size()) return;
  const auto departure = live_layer_departure(*recorded_.trace, static_cast<size_t>(s), live_.target_forwards[static_cast<size_t>(s)],
                                              policy_.hidden_nmse);
  if (!departure) return;
  d.layer = departure->layer;
  d.substep = departure->substep;
  d.layer_row = departure->row;
  d.layer_value = departure->nmse;
}

StepOutcome StepComparer::fail(const std::string& what, const std::string& detail) const {
  Divergence d = base_;
  d.what = what;
  d.detail = detail;
  return fail_with(d);
}

StepOutcome StepComparer::fail_with(const Divergence& d) {
  StepOutcome o;
  o.kind = StepOutcome::Kind::fail;
  o.failure = d;
  return o;
}

StepOutcome StepComparer::near_tie(const NearTie& t, bool force_draft) {
  StepOutcome o;
  o.kind = StepOutcome::Kind::near_tie;
  o.tie = t;
  o.force_draft = force_draft;
  return o;
}

Divergence StepComparer::tolerance_failure(const std::string& what, int row, double value, double bound, const std::string& measure) const {
  Divergence d = base_;
  d.what = what;
  d.row = row;
  d.value = value;
  d.bound = bound;
  d.detail = what + " row " + std::to_string(row) + ": " + measure + " " + g(value) + " exceeds the bound " + g(bound);
  return d;
}

}  // namespace specdec::validation
