#include "experiments/validation/validator.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <type_traits>

#include "experiments/validation/drafter_rows.hpp"
#include "experiments/validation/forced_proposer.hpp"
#include "experiments/validation/layer_departure.hpp"
#include "experiments/validation/observed_head.hpp"
#include "experiments/validation/observed_model.hpp"
#include "experiments/validation/row_comparison.hpp"
#include "experiments/validation/run_recorder.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"

namespace specdec::validation {

namespace {

// Quantity names, rules and bounds, in report order.
struct QuantityInfo {
  std::string name, rule;
  double bound;
};
std::vector<QuantityInfo> quantity_infos(const TolerancePolicy& p) {
  return {{"target logits", "NMSE per row", p.logits_nmse},
          {"target logits (top-k)", "NMSE over the recorded top-k", p.logits_nmse},
          {"top-k membership", "excess over the k-th value", p.near_tie_logit_margin},
          {"logsumexp", "absolute difference", p.logsumexp_abs},
          {"hidden states", "NMSE per row", p.hidden_nmse},
          {"draft LM logits", "NMSE per row", p.logits_nmse},
          {"drafter features", "NMSE per row", p.hidden_nmse},
          {"drafter hidden states", "NMSE per row", p.hidden_nmse},
          {"drafter logits", "NMSE per row", p.logits_nmse},
          {"draft distributions q", "max absolute difference", p.draft_probability_abs}};
}

// Worst value per quantity and step, so that a step compared again in a later run replaces its
// earlier figures instead of counting twice.
class Stats {
 public:
  // Forgets step `step` before it is compared again; a step whose target logits were forced
  // keeps their figures from the run that measured them (the forced rows are the reference's).
  void clear_step(int step, bool keep_target_logits) {
    for (auto& [q, steps] : data_) {
      const bool logits = q == "target logits" || q == "target logits (top-k)" || q == "top-k membership" || q == "logsumexp";
      if (!(keep_target_logits && logits)) steps.erase(step);
    }
  }
  void add(const std::string& quantity, int step, double value, const std::string& at) {
    Entry& e = data_[quantity][step];
    if (e.count == 0 || value > e.worst || std::isnan(value)) {
      e.worst = value;
      e.at = at;
    }
    ++e.count;
  }
  std::vector<QuantitySummary> summary(const TolerancePolicy& policy) const {
    std::vector<QuantitySummary> out;
    for (const QuantityInfo& info : quantity_infos(policy)) {
      const auto it = data_.find(info.name);
      if (it == data_.end() || it->second.empty()) continue;
      QuantitySummary q;
      q.quantity = info.name;
      q.rule = info.rule;
      q.bound = info.bound;
      bool first = true;
      for (const auto& [step, e] : it->second) {
        q.compared += e.count;
        if (first || e.worst > q.worst || std::isnan(e.worst)) {
          q.worst = e.worst;
          q.worst_at = e.at;
          first = false;
        }
      }
      q.pass = !(q.worst > q.bound) && !std::isnan(q.worst);
      out.push_back(q);
    }
    return out;
  }

 private:
  struct Entry {
    double worst = 0;
    std::string at;
    long count = 0;
  };
  std::map<std::string, std::map<int, Entry>> data_;
};

struct Forcing {
  std::map<int, Matrix> logits;    // target forward (= step) -> the rows it returns instead
  std::map<int, Proposal> drafts;  // step -> the proposal made instead
};

struct Side {
  RecordedRun run;
  std::vector<ForwardRecord> target_forwards;
  std::vector<ForwardRecord> draft_forwards;
  std::vector<HeadForwardRecord> head_forwards;  // kept when the run observes its drafter's rows
  const EagleHead* head = nullptr;                // the head whose forwards were observed, if any
};

// `layer_states`: keep the target's per-layer states; `drafter_rows`: keep every drafter forward's
// inputs and outputs (to compare with a candidate trace's recorded drafter rows).
Side run_side(const ValidationSetup& setup, const Backend& b, const Forcing& forcing, bool layer_states = false,
              bool drafter_rows = false) {
  if (!b.target) throw Error("validation: backend '" + b.name + "' has no target model");
  int draft_step = 0;
  ObservedModel target(*b.target, false, nullptr, layer_states);
  for (const auto& [s, m] : forcing.logits) target.replace_logits(s, m);
  std::optional<ObservedModel> draft;
  if (b.draft_lm) draft.emplace(*b.draft_lm, true, &draft_step);
  TraceMeta meta;
  meta.method = setup.method;
  meta.seed = setup.sampling.seed;
  RunRecorder recorder(meta, setup.sampling, setup.options.sequence);
  std::shared_ptr<const ObservedHeadEngine> head_observer;
  std::optional<EagleHead> observed_head;
  if (b.head && drafter_rows) observed_head.emplace(observe_head(*b.head, &draft_step, head_observer));
  const EagleHead* head = observed_head ? &*observed_head : b.head;
  std::unique_ptr<Proposer> inner = setup.make_proposer ? setup.make_proposer(draft ? &*draft : nullptr, head) : nullptr;
  if (!inner) {
    decode_sequential(target, setup.prompt, setup.sampling, setup.options, &recorder);
  } else {
    ForcedProposer proposer(*inner, &draft_step);
    for (const auto& [s, p] : forcing.drafts) proposer.force(s, p);
    const auto acceptor = default_acceptor(setup.sampling);
    decode_speculative(target, proposer, *acceptor, setup.prompt, setup.sampling, setup.options, &recorder);
  }
  Side side;
  side.run = recorder.take();
  side.target_forwards = target.records();
  if (draft) side.draft_forwards = draft->records();
  if (head_observer) side.head_forwards = head_observer->records();
  if (head_observer) side.head = b.head;
  return side;
}

// The reference side: a live run (extras and forwards present) or a recorded trace.
struct Reference {
  const Trace* trace = nullptr;
  // The roles reversed: the trace is the candidate's (an outside engine's), the live side the
  // reference. Margins and near-ties then come from the live side's rows, and the report names
  // the sides as they are.
  bool trace_is_candidate = false;
  const std::vector<StepExtras>* extras = nullptr;
  const std::vector<ForwardRecord>* target_forwards = nullptr;
  const std::vector<ForwardRecord>* draft_forwards = nullptr;
};

std::string at_row(int step, int row) { return "step " + std::to_string(step) + " row " + std::to_string(row); }

std::string g(double v) { return format_brief(v); }

// Decisions of a recorded step from its logits rows: full rows for every mode, top-k rows for
// greedy. Nothing when the trace cannot give them.
std::optional<std::vector<Decision>> trace_decisions(const StepRecord& r, const SamplingParams& sampling, uint32_t sequence,
                                                     const std::optional<std::vector<std::vector<double>>>& q) {
  if (r.target_logits.empty()) return std::nullopt;
  const bool full = r.target_logits[0].is_full();
  const int V = full ? static_cast<int>(r.target_logits[0].full.size()) : r.target_logits[0].summary.vocab_size;
  const DraftTree tree{r.draft_tokens, r.draft_parents};
  if (full) {
    Matrix rows(static_cast<Eigen::Index>(r.target_logits.size()), V);
    for (size_t j = 0; j < r.target_logits.size(); ++j) {
      if (!r.target_logits[j].is_full()) return std::nullopt;
      std::copy(r.target_logits[j].full.begin(), r.target_logits[j].full.end(), rows.row(static_cast<Eigen::Index>(j)).data());
    }
    if (tree.size() == 0) {
      return std::vector<Decision>{token_decision(rows.data(), V, sampling, sequence, static_cast<int32_t>(r.position))};
    }
    if (!q) return std::nullopt;
    VerifyInput in;
    in.tree = &tree;
    in.target_logits = &rows;
    in.draft_probs = &*q;
    in.sampling = sampling;
    in.sequence = sequence;
    in.root_position = static_cast<int32_t>(r.position);
    return verify_decisions(in);
  }
  if (sampling.mode != SamplingParams::Mode::greedy) return std::nullopt;
  return match_path_decisions(tree, static_cast<int32_t>(r.position), [&](int row, int32_t position) {
    const LogitSummary& s = r.target_logits.at(static_cast<size_t>(row)).summary;
    return topk_choice(s.topk_ids, s.topk_values, s.vocab_size, position);
  });
}

// Sampled-draft distributions of a recorded step (from its log q rows): empty for deterministic
// drafts, nothing when the rows are top-k summaries.
std::optional<std::vector<std::vector<double>>> trace_draft_probs(const StepRecord& r) {
  std::vector<std::vector<double>> q;
  if (r.draft_logits.empty()) return q;
  q.resize(r.draft_tokens.size() + 1);
  for (size_t i = 0; i < r.draft_logits.size(); ++i) {
    if (!r.draft_logits[i].is_full()) return std::nullopt;
    const int node = r.draft_logit_nodes.at(i);
    std::vector<double>& row = q.at(static_cast<size_t>(node + 1));
    for (float lq : r.draft_logits[i].full) row.push_back(std::isinf(lq) && lq < 0 ? 0.0 : std::exp(static_cast<double>(lq)));
  }
  return q;
}

// The reference drafter's margin at node `node` of a greedy chain: node j is drafted from the
// step's j-th drafter row with logits, and the margin is that row's logit gap between the
// reference's token (its top choice) and the candidate's, by draft ids. Unknown when the row is
// missing, either id is outside the drafter's vocabulary or the reference's token is not the top.
double chain_draft_margin(const std::vector<DrafterRow>& reference_rows, size_t node, int reference_id, int candidate_id) {
  size_t with_logits = 0;
  for (const DrafterRow& row : reference_rows) {
    if (!row.logits || with_logits++ != node) continue;
    if (reference_id < 0 || candidate_id < 0 || reference_id >= row.vocab || candidate_id >= row.vocab) return kUnknown;
    if (std::max_element(row.logits, row.logits + row.vocab) - row.logits != reference_id) return kUnknown;
    return static_cast<double>(row.logits[reference_id]) - static_cast<double>(row.logits[candidate_id]);
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

struct StepOutcome {
  enum class Kind { equal, near_tie, fail } kind = Kind::equal;
  NearTie tie;
  bool force_draft = false;  // near-tie of the drafter (else of the target's decision)
  Divergence failure;
};

class StepComparer {
 public:
  StepComparer(const ValidationSetup& setup, const TolerancePolicy& policy, const Side& cand, const Reference& ref,
               const Forcing& forcing, Stats& stats)
      : setup_(setup), policy_(policy), cand_(cand), ref_(ref), forcing_(forcing), stats_(stats) {}

  StepOutcome compare(int s) {
    StepOutcome out = compare_step(s);
    // Drafter failures are localised by their drafter row; the target forward that follows a
    // differing draft differs for that reason alone.
    const bool drafter = out.failure.what == "draft" || out.failure.what.rfind("drafter", 0) == 0;
    if (out.kind == StepOutcome::Kind::fail && out.failure.step == s && !drafter) localise(s, out.failure);
    return out;
  }

 private:
  // With a candidate trace that records its per-layer target states: the first layer and
  // sub-step of step s's target forward, in forward order, whose state (at any recorded row) is
  // beyond the hidden-state bound against the live reference's.
  void localise(int s, Divergence& d) const {
    if (!ref_.trace_is_candidate) return;
    const TargetLayersLayout& layout = ref_.trace->target_layers;
    const StepRecord& r = ref_.trace->steps[static_cast<size_t>(s)];
    if (layout.num_layers == 0 || r.layer_row_nodes.empty()) return;
    if (static_cast<size_t>(s) >= cand_.target_forwards.size()) return;
    const ForwardRecord& live = cand_.target_forwards[static_cast<size_t>(s)];
    const int64_t L = layout.num_layers, H = layout.hidden_size, U = static_cast<int64_t>(layout.substeps.size());
    if (live.layer_states.size() != static_cast<size_t>(4 * L)) return;  // a live backend without layer states
    const int64_t T = static_cast<int64_t>(live.tokens.size());
    const int64_t nodes = static_cast<int64_t>(r.draft_tokens.size());
    std::vector<int> substep_index;  // the trace's sub-steps as indices into kLayerStateNames
    for (const std::string& name : layout.substeps) {
      int k = -1;
      for (int i = 0; i < 4; ++i)
        if (name == kLayerStateNames[i]) k = i;
      substep_index.push_back(k);
    }
    // The forward's row of recorded row i: the root (node -1) or a draft node.
    auto forward_row = [&](int64_t i) {
      const int32_t node = r.layer_row_nodes[static_cast<size_t>(i)];
      return node < 0 ? T - 1 - nodes : T - nodes + node;
    };
    const auto departure = first_layer_departure(
        layout, static_cast<int64_t>(r.layer_row_nodes.size()), policy_.hidden_nmse,
        [&](int64_t i, int64_t l, int64_t u) -> std::pair<const float*, const float*> {
          const int k = substep_index[static_cast<size_t>(u)];
          const int64_t row = forward_row(i);
          if (k < 0 || row < 0 || row >= T) return {nullptr, nullptr};
          const Matrix& state = live.layer_states[static_cast<size_t>(4 * l + k)];
          if (state.cols() != H) return {nullptr, nullptr};
          return {r.layer_hidden.data() + ((i * L + l) * U + u) * H, state.row(static_cast<Eigen::Index>(row)).data()};
        });
    if (!departure) return;
    d.layer = departure->layer;
    d.substep = departure->substep;
    d.layer_row = static_cast<int>(forward_row(departure->row));
    d.layer_value = departure->nmse;
  }

 public:
  StepOutcome compare_step(int s) {
    const StepRecord& c = cand_.run.trace.steps[static_cast<size_t>(s)];
    const StepRecord& r = ref_.trace->steps[static_cast<size_t>(s)];
    const bool logits_forced = forcing_.logits.count(s) > 0;
    stats_.clear_step(s, logits_forced);
    base_ = Divergence{};
    base_.step = s;
    base_.position = static_cast<int32_t>(r.position);
    const bool swapped = ref_.trace_is_candidate;
    base_.reference_emitted = swapped ? c.emitted_tokens : r.emitted_tokens;
    base_.candidate_emitted = swapped ? r.emitted_tokens : c.emitted_tokens;
    if (c.position != r.position) {
      return fail("step field", "position " + std::to_string(swapped ? r.position : c.position) + " vs the reference's " +
                                    std::to_string(swapped ? c.position : r.position));
    }

    if (auto f = compare_draft_forwards(s)) return *f;
    const bool drafts_differ = c.draft_tokens != r.draft_tokens || c.draft_parents != r.draft_parents;
    if (auto f = compare_drafter_rows_of(s, c, r, drafts_differ)) return *f;
    if (drafts_differ) return draft_divergence(s, c, r);
    if (auto f = compare_draft_probs(s, c, r)) return *f;

    // Target logits, row by row (not at a step whose rows were forced: they are the reference's).
    if (c.target_logits.size() != r.target_logits.size() && !r.target_logits.empty()) {
      return fail("step field", std::to_string(c.target_logits.size()) + " target logits rows vs the reference's " +
                                    std::to_string(r.target_logits.size()));
    }
    std::vector<double> row_error(c.target_logits.size(), kUnknown);
    std::optional<Divergence> tolerance;
    if (!logits_forced) {
      for (size_t j = 0; j < r.target_logits.size(); ++j) {
        const std::vector<float>& cr = c.target_logits[j].full;
        const int row = static_cast<int>(j);
        if (r.target_logits[j].is_full()) {
          const RowDifference d = compare_rows(cr.data(), r.target_logits[j].full.data(), static_cast<int>(cr.size()));
          row_error[j] = d.max_abs;
          stats_.add("target logits", s, d.nmse, at_row(s, row));
          if (!tolerance && !(d.nmse <= policy_.logits_nmse)) tolerance = tolerance_failure("target logits", row, d.nmse, policy_.logits_nmse, "NMSE");
        } else {
          const SummaryDifference d = compare_to_summary(cr.data(), static_cast<int>(cr.size()), r.target_logits[j].summary);
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
    }

    // Token decisions, in evaluation order.
    const std::vector<Decision>& cd = cand_.run.extras[static_cast<size_t>(s)].decisions;
    std::optional<std::vector<Decision>> rd;
    if (ref_.extras) rd = (*ref_.extras)[static_cast<size_t>(s)].decisions;
    else rd = trace_decisions(r, setup_.sampling, setup_.options.sequence, trace_draft_probs(r));
    if (rd) {
      size_t i = 0;
      while (i < cd.size() && i < rd->size() && cd[i].same_outcome((*rd)[i])) ++i;
      if (i < cd.size() || i < rd->size()) return decision_divergence(s, c, r, cd, *rd, i, row_error, tolerance, logits_forced);
    }
    if (tolerance) return fail_with(*tolerance);

    if (auto f = compare_hidden(s)) return *f;
    return compare_fields(c, r);
  }

 private:
  StepOutcome fail(const std::string& what, const std::string& detail) {
    Divergence d = base_;
    d.what = what;
    d.detail = detail;
    return fail_with(d);
  }
  static StepOutcome fail_with(const Divergence& d) {
    StepOutcome o;
    o.kind = StepOutcome::Kind::fail;
    o.failure = d;
    return o;
  }
  Divergence tolerance_failure(const std::string& what, int row, double value, double bound, const std::string& measure) {
    Divergence d = base_;
    d.what = what;
    d.row = row;
    d.value = value;
    d.bound = bound;
    d.detail = what + " row " + std::to_string(row) + ": " + measure + " " + g(value) + " exceeds the bound " + g(bound);
    return d;
  }

  // Drafter forwards of step s (live runs with a draft LM): logits within tolerance while the
  // two drafters were given the same input.
  std::optional<StepOutcome> compare_draft_forwards(int s) {
    if (!ref_.draft_forwards) return std::nullopt;
    std::vector<const ForwardRecord*> a, b;
    for (const ForwardRecord& f : cand_.draft_forwards)
      if (f.step == s) a.push_back(&f);
    for (const ForwardRecord& f : *ref_.draft_forwards)
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

  // A candidate trace that records its drafter's rows (traces/SCHEMA.md, "Drafter inputs and
  // outputs"), at a step whose draft was not forced: its rows against the live reference's. Rows
  // out of tolerance fail, naming the row, its forward and what departed (the inputs: another
  // engine fed its drafter other target states, tokens or positions; the outputs: its drafter
  // computes differently). When every row agrees, drafter_rows_agree_ is set: a differing draft is
  // then a drafter near-tie, not a bug.
  std::optional<StepOutcome> compare_drafter_rows_of(int s, const StepRecord& c, const StepRecord& r, bool drafts_differ) {
    drafter_rows_agree_ = false;
    drafter_margin_ = kUnknown;
    if (!ref_.trace_is_candidate || !ref_.trace->drafter_io.present || forcing_.drafts.count(s)) return std::nullopt;
    const std::vector<DrafterRow> recorded = trace_drafter_rows(*ref_.trace, r);
    if (recorded.empty()) return std::nullopt;
    const std::vector<DrafterRow> live = live_drafter_rows(s, cand_.head_forwards, cand_.draft_forwards);
    // The candidate's drafted tokens from the first node where the drafts differ.
    const size_t n = first_differing_node(c, r);
    const std::vector<int32_t> diverged(r.draft_tokens.begin() + static_cast<std::ptrdiff_t>(n), r.draft_tokens.end());
    const DrafterComparison cmp = compare_drafter_rows(recorded, live, policy_, drafts_differ ? &diverged : nullptr,
                                                       [&](const std::string& q, double v, const std::string& at) {
                                                         stats_.add(q, s, v, "step " + std::to_string(s) + " " + at);
                                                       });
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
    // Greedy chains (EAGLE, P-EAGLE): the reference drafter's own margin at the node (unknown for
    // trees and sampled drafts, where ranks and draws decide).
    bool chain = true;
    for (size_t i = 0; i < c.draft_parents.size(); ++i) chain = chain && c.draft_parents[i] == static_cast<int32_t>(i) - 1;
    if (drafts_differ && chain && setup_.sampling.mode == SamplingParams::Mode::greedy && n < c.draft_tokens.size() &&
        n < r.draft_tokens.size())
      drafter_margin_ = chain_draft_margin(live, n, draft_id(cand_.head, c.draft_tokens[n]), draft_id(cand_.head, r.draft_tokens[n]));
    return std::nullopt;
  }

  StepOutcome draft_divergence(int s, const StepRecord& c, const StepRecord& r) {
    const size_t n = first_differing_node(c, r);
    auto describe = [&](const StepRecord& x) {
      if (n >= x.draft_tokens.size()) return "no node " + std::to_string(n) + " (" + std::to_string(x.draft_tokens.size()) + " drafted)";
      return "node " + std::to_string(n) + " = token " + std::to_string(x.draft_tokens[n]) + " under parent " + std::to_string(x.draft_parents[n]);
    };
    NearTie t;
    t.step = s;
    t.position = static_cast<int32_t>(r.position);
    if (n < r.draft_tokens.size()) {
      const DraftTree tree{r.draft_tokens, r.draft_parents};
      t.position += tree.depth(static_cast<int>(n)) - 1;
    }
    t.kind = "draft";
    t.reference_token = n < r.draft_tokens.size() ? r.draft_tokens[n] : -1;
    t.candidate_token = n < c.draft_tokens.size() ? c.draft_tokens[n] : -1;
    t.reference = describe(r);
    t.candidate = describe(c);
    if (ref_.trace_is_candidate && drafter_rows_agree_) {
      // The drafter was given the same inputs and returned the same outputs within tolerance: the
      // draft token differs where the drafter's decision is close, unless its margin says not.
      t.margin = drafter_margin_;
      t.margin_units = std::isnan(drafter_margin_) ? "" : "logit";
      if (!std::isnan(drafter_margin_) && !(drafter_margin_ < policy_.near_tie_logit_margin)) {
        Divergence d = base_;
        d.what = "draft";
        d.position = t.position;
        d.reference_token = t.candidate_token;
        d.candidate_token = t.reference_token;
        d.margin = drafter_margin_;
        d.margin_units = "logit";
        d.detail = "the drafts differ: reference " + t.candidate + ", candidate " + t.reference +
                   "; the drafter's inputs and outputs agree within tolerance, but the reference drafter's margin " + g(drafter_margin_) +
                   " is not below the near-tie threshold " + g(policy_.near_tie_logit_margin) + " (the candidate chose its draft wrongly)";
        return fail_with(d);
      }
      std::swap(t.reference, t.candidate);
      std::swap(t.reference_token, t.candidate_token);
      StepOutcome o;
      o.kind = StepOutcome::Kind::near_tie;
      o.tie = t;
      o.force_draft = true;
      return o;
    }
    if (ref_.trace_is_candidate) {
      // Without the drafter's rows, a changed draft cannot be told from a drafter bug with
      // self-consistent logits: it fails, unless the drafts are forced.
      Divergence d = base_;
      d.what = "draft";
      d.position = t.position;
      d.reference_token = t.candidate_token;
      d.candidate_token = t.reference_token;
      d.detail = "the drafts differ: reference " + t.candidate + ", candidate " + t.reference +
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
    StepOutcome o;
    o.kind = StepOutcome::Kind::near_tie;
    o.tie = t;
    o.force_draft = true;
    return o;
  }

  std::optional<StepOutcome> compare_draft_probs(int s, const StepRecord& c, const StepRecord& r) {
    const std::vector<std::vector<double>>& cq = cand_.run.extras[static_cast<size_t>(s)].draft_probs;
    std::optional<std::vector<std::vector<double>>> rq;
    if (ref_.extras) rq = (*ref_.extras)[static_cast<size_t>(s)].draft_probs;
    else rq = trace_draft_probs(r);
    if (!rq) return std::nullopt;  // a trace with top-k draft rows: nothing exact to compare
    if (cq.empty() != rq->empty() || (!cq.empty() && cq.size() != rq->size())) {
      const std::size_t candidate_q = ref_.trace_is_candidate ? rq->size() : cq.size();
      const std::size_t reference_q = ref_.trace_is_candidate ? cq.size() : rq->size();
      return fail("draft distributions", "the candidate drafted with " + std::to_string(candidate_q) + " sampled distributions, the reference with " +
                                             std::to_string(reference_q));
    }
    (void)c;
    for (size_t k = 0; k < cq.size(); ++k) {
      if (cq[k].empty() || (*rq)[k].empty()) continue;
      if (cq[k].size() != (*rq)[k].size()) return fail("draft distributions", "q row sizes differ at node " + std::to_string(static_cast<int>(k) - 1));
      double worst = 0;
      for (size_t v = 0; v < cq[k].size(); ++v) worst = std::max(worst, std::abs(cq[k][v] - (*rq)[k][v]));
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

  StepOutcome decision_divergence(int s, const StepRecord& c, const StepRecord& r, const std::vector<Decision>& cd,
                                  const std::vector<Decision>& rd, size_t i, const std::vector<double>& row_error,
                                  const std::optional<Divergence>& tolerance, bool logits_forced) {
    const Decision* a = i < cd.size() ? &cd[i] : nullptr;
    const Decision* b = i < rd.size() ? &rd[i] : nullptr;
    const Decision& any = b ? *b : *a;
    // The two tokens: those chosen or drawn; after an acceptance test, those the runs emitted
    // at the tested position (the node's token if accepted, else what came instead).
    const size_t k = static_cast<size_t>(std::max<int64_t>(0, any.position - r.position));
    auto token = [&](const Decision* x, const StepRecord& step) -> int32_t {
      if (x && x->kind != DecisionKind::test) return x->token;
      if (k < step.emitted_tokens.size()) return step.emitted_tokens[k];
      return x ? x->token : -1;
    };
    const bool swapped = ref_.trace_is_candidate;
    // The reference's side: the trace (b), or with a candidate trace the live run (a).
    const Decision* reference_decision = swapped ? a : b;
    const Decision* candidate_decision = swapped ? b : a;
    const int32_t ref_token = swapped ? token(a, c) : token(b, r);
    const int32_t cand_token = swapped ? token(b, r) : token(a, c);
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
      StepOutcome o;
      o.kind = StepOutcome::Kind::near_tie;
      o.tie = t;
      return o;
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

  std::optional<StepOutcome> compare_hidden(int s) {
    if (!ref_.target_forwards) return std::nullopt;
    const size_t i = static_cast<size_t>(s);
    if (i >= cand_.target_forwards.size() || i >= ref_.target_forwards->size()) return std::nullopt;
    const ForwardRecord& a = cand_.target_forwards[i];
    const ForwardRecord& b = (*ref_.target_forwards)[i];
    if (!a.same_request(b)) return std::nullopt;
    for (const auto& [name, x, y] : {std::tuple<const char*, const Matrix*, const Matrix*>{"final", &a.final_hidden, &b.final_hidden},
                                     std::tuple<const char*, const Matrix*, const Matrix*>{"aux", &a.aux_hidden, &b.aux_hidden}}) {
      if (x->rows() != y->rows() || x->cols() != y->cols()) {
        return fail("hidden states", std::string(name) + " hidden states have shape (" + std::to_string(x->rows()) + ", " +
                                         std::to_string(x->cols()) + ") vs the reference's (" + std::to_string(y->rows()) + ", " +
                                         std::to_string(y->cols()) + ")");
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

  StepOutcome compare_fields(const StepRecord& c, const StepRecord& r) {
    auto list = [](const auto& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ' ';
        using T = std::decay_t<decltype(v[i])>;
        if constexpr (std::is_same_v<T, double>) {
          s += g(v[i]);
        } else if constexpr (std::is_same_v<T, std::array<uint32_t, 4>>) {
          s += '{';
          for (size_t w = 0; w < 4; ++w) {
            if (w) s += ',';
            s += std::to_string(v[i][w]);
          }
          s += '}';
        } else {
          s += std::to_string(static_cast<long long>(v[i]));
        }
      }
      s += ']';
      return s;
    };
    auto bitwise_equal = [](const std::vector<double>& x, const std::vector<double>& y) {
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (std::bit_cast<uint64_t>(x[i]) != std::bit_cast<uint64_t>(y[i])) return false;
      return true;
    };
    std::string field, cv, rv;
    if (c.emitted_tokens != r.emitted_tokens) field = "emitted_tokens", cv = list(c.emitted_tokens), rv = list(r.emitted_tokens);
    else if (c.accepted_path != r.accepted_path) field = "accepted_path", cv = list(c.accepted_path), rv = list(r.accepted_path);
    else if (c.accept_decisions != r.accept_decisions) field = "accept_decisions", cv = list(c.accept_decisions), rv = list(r.accept_decisions);
    else if (c.accept_nodes != r.accept_nodes) field = "accept_nodes", cv = list(c.accept_nodes), rv = list(r.accept_nodes);
    else if (!bitwise_equal(c.accept_uniforms, r.accept_uniforms)) field = "accept_uniforms", cv = list(c.accept_uniforms), rv = list(r.accept_uniforms);
    else if (c.bonus_token != r.bonus_token) field = "bonus_token", cv = std::to_string(c.bonus_token), rv = std::to_string(r.bonus_token);
    else if (c.random_counters != r.random_counters) field = "random_counters", cv = list(c.random_counters), rv = list(r.random_counters);
    if (field.empty()) return StepOutcome{};
    if (ref_.trace_is_candidate) std::swap(cv, rv);
    Divergence d = base_;
    d.what = "step field";
    d.detail = field + ": candidate " + cv + ", reference " + rv;
    if (field == "emitted_tokens") {
      // The position of the first emitted token that differs.
      std::size_t k = 0;
      while (k < c.emitted_tokens.size() && k < r.emitted_tokens.size() && c.emitted_tokens[k] == r.emitted_tokens[k]) ++k;
      d.position = static_cast<int32_t>(r.position + static_cast<int64_t>(k));
      d.reference_token = k < (ref_.trace_is_candidate ? c : r).emitted_tokens.size() ? (ref_.trace_is_candidate ? c : r).emitted_tokens[k] : -1;
      d.candidate_token = k < (ref_.trace_is_candidate ? r : c).emitted_tokens.size() ? (ref_.trace_is_candidate ? r : c).emitted_tokens[k] : -1;
      // The reference's own decision of that token, with its margin: a candidate whose logits
      // and draws agree but whose rule is wrong (a residual, a bonus) differs only here.
      const std::size_t step = static_cast<std::size_t>(base_.step);
      const std::vector<Decision>* own = ref_.trace_is_candidate ? &cand_.run.extras[step].decisions
                                         : ref_.extras                ? &(*ref_.extras)[step].decisions
                                                                      : nullptr;
      if (own) {
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

  const ValidationSetup& setup_;
  const TolerancePolicy& policy_;
  const Side& cand_;
  const Reference& ref_;
  const Forcing& forcing_;
  Stats& stats_;
  Divergence base_;
  bool drafter_rows_agree_ = false;  // this step's recorded drafter rows agree with the reference's
  double drafter_margin_ = kUnknown;
};

// The rows a forced target forward returns at step s: the reference's, or, from a top-k trace,
// the candidate's rows made to agree with the reference's top-k.
Matrix forced_logits(const StepRecord& r, const StepRecord& c) {
  if (r.target_logits.empty() || c.target_logits.empty()) throw Error("validation: no logits to force at this step");
  const int V = static_cast<int>(c.target_logits[0].full.size());
  Matrix m(static_cast<Eigen::Index>(r.target_logits.size()), V);
  for (size_t j = 0; j < r.target_logits.size(); ++j) {
    const std::vector<float> row = r.target_logits[j].is_full()
                                       ? r.target_logits[j].full
                                       : forced_row_from_summary(c.target_logits[j].full.data(), V, r.target_logits[j].summary);
    if (static_cast<int>(row.size()) != V) throw Error("validation: the reference's logits rows have " + std::to_string(row.size()) + " entries; the candidate's " + std::to_string(V));
    std::copy(row.begin(), row.end(), m.row(static_cast<Eigen::Index>(j)).data());
  }
  return m;
}

// Every recorded proposal of a trace, as forcings of the live side's drafts.
void force_recorded_drafts(const Trace& trace, const std::string& name, Forcing& forcing) {
  for (std::size_t s = 0; s < trace.steps.size(); ++s) {
    const StepRecord& r = trace.steps[s];
    if (r.draft_tokens.empty()) continue;
    const auto q = trace_draft_probs(r);
    if (!q) {
      throw Error(name + ": step " + std::to_string(s) + " keeps its draft distributions as top-k rows; forcing its drafts needs them in full");
    }
    Proposal p;
    p.tree = DraftTree{r.draft_tokens, r.draft_parents};
    p.draft_probs = *q;
    forcing.drafts[static_cast<int>(s)] = std::move(p);
  }
}

ValidationReport run_validation(const ValidationSetup& setup, const Backend& candidate, const Reference& ref, ValidationReport report,
                                const TolerancePolicy& policy, bool force_drafts = false) {
  report.policy = policy;
  report.method = setup.method;
  report.reference_steps = static_cast<int>(ref.trace->steps.size());
  Forcing forcing;
  if (force_drafts) force_recorded_drafts(*ref.trace, ref.trace_is_candidate ? report.candidate : report.reference, forcing);
  Stats stats;
  for (;;) {
    const bool layer_states = ref.trace_is_candidate && ref.trace->target_layers.num_layers > 0;
    const bool drafter_rows = ref.trace_is_candidate && ref.trace->drafter_io.present;
    const Side cand = run_side(setup, candidate, forcing, layer_states, drafter_rows);
    ++report.candidate_runs;
    StepComparer comparer(setup, policy, cand, ref, forcing, stats);
    const int n = static_cast<int>(std::min(cand.run.trace.steps.size(), ref.trace->steps.size()));
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
      const StepRecord& r = ref.trace->steps[static_cast<size_t>(s)];
      const StepRecord& c = cand.run.trace.steps[static_cast<size_t>(s)];
      if (out.force_draft) {
        Proposal p;
        p.tree = DraftTree{r.draft_tokens, r.draft_parents};
        if (ref.extras) {
          p.draft_probs = (*ref.extras)[static_cast<size_t>(s)].draft_probs;
        } else {
          const auto q = trace_draft_probs(r);
          if (!q) {
            Divergence d;
            d.step = s;
            d.position = out.tie.position;
            d.what = "draft";
            d.detail = "the drafts differ (reference " + out.tie.reference + ", candidate " + out.tie.candidate +
                       ") and the trace keeps the draft distributions as top-k, so the reference's draft cannot be forced";
            report.failure = d;
            break;
          }
          p.draft_probs = *q;
        }
        forcing.drafts[s] = std::move(p);
      } else {
        forcing.logits[s] = forced_logits(r, c);
      }
      continue;
    }
    if (out.kind == StepOutcome::Kind::fail) {
      report.failure = out.failure;
      break;
    }
    const Trace& ct = cand.run.trace;
    if (ct.steps.size() != ref.trace->steps.size()) {
      Divergence d;
      d.step = n;
      d.what = "steps";
      const std::size_t live = ct.steps.size(), recorded = ref.trace->steps.size();
      d.detail = "the candidate ran " + std::to_string(ref.trace_is_candidate ? recorded : live) + " steps, the reference " +
                 std::to_string(ref.trace_is_candidate ? live : recorded);
      report.failure = d;
    } else if (ct.output != ref.trace->output || ct.stop_reason != ref.trace->stop_reason) {
      Divergence d;
      d.what = "steps";
      d.detail = "the outputs differ (" + std::to_string(ct.output.size()) + " tokens, stop " + ct.stop_reason + " vs " +
                 std::to_string(ref.trace->output.size()) + " tokens, stop " + ref.trace->stop_reason + ")";
      report.failure = d;
    }
    break;
  }
  for (int s = 0; s < report.steps_compared; ++s) report.tokens_compared += static_cast<int>(ref.trace->steps[static_cast<size_t>(s)].emitted_tokens.size());
  report.quantities = stats.summary(policy);
  report.passed = !report.failure.has_value();
  return report;
}

// Proposes, step by step, what a recorded trace proposed (--force-drafts without a drafter of the
// candidate's kind): its trees and, for sampled drafts, its q rows.
class TraceProposer final : public Proposer {
 public:
  TraceProposer(const Trace& trace, std::string name) : trace_(trace), name_(std::move(name)) {
    Forcing f;
    force_recorded_drafts(trace_, name_, f);
    proposals_ = std::move(f.drafts);
    for (const auto& [s, p] : proposals_) max_nodes_ = std::max(max_nodes_, p.tree.size());
  }
  std::string name() const override { return "recorded drafts of " + name_; }
  int max_nodes() const override { return std::max(1, max_nodes_); }
  Proposal propose(const DraftContext&) override {
    // Past what the trace recorded (a live run that went another way): no draft, so the step
    // verifies only the pending token and the comparison reports where the runs parted.
    const auto it = proposals_.find(++step_);
    return it == proposals_.end() ? Proposal{} : it->second;
  }

 private:
  const Trace& trace_;
  std::string name_;
  std::map<int, Proposal> proposals_;
  int max_nodes_ = 0;
  int step_ = 0;
};

}  // namespace

std::unique_ptr<Proposer> make_trace_proposer(const Trace& trace, const std::string& name) {
  return std::make_unique<TraceProposer>(trace, name);
}

ValidationReport validate_candidate_trace(const ValidationSetup& setup, const Backend& reference, const Trace& candidate,
                                          const std::string& candidate_name, bool force_drafts, const TolerancePolicy& policy) {
  if (setup.prompt != candidate.prompt) throw Error("validation: the run's prompt is not the candidate trace's (" + candidate_name + ")");
  if (candidate.steps.empty()) throw Error(candidate_name + " records no steps; there is nothing to validate");
  // No exactness-contract check: an outside engine computes as it computes, and its numbers are
  // held to the tolerance policy, never compared bit for bit.
  ValidationReport report;
  report.candidate = candidate_name;
  report.reference = reference.name;
  Reference ref;
  ref.trace = &candidate;
  ref.trace_is_candidate = true;
  return run_validation(setup, reference, ref, std::move(report), policy, force_drafts);
}

ValidationReport validate_backends(const ValidationSetup& setup, const Backend& candidate, const Backend& reference,
                                   const TolerancePolicy& policy) {
  const Side ref_side = run_side(setup, reference, Forcing{});
  Reference ref;
  ref.trace = &ref_side.run.trace;
  ref.extras = &ref_side.run.extras;
  ref.target_forwards = &ref_side.target_forwards;
  ref.draft_forwards = reference.draft_lm ? &ref_side.draft_forwards : nullptr;
  ValidationReport report;
  report.candidate = candidate.name;
  report.reference = reference.name;
  return run_validation(setup, candidate, ref, std::move(report), policy);
}

ValidationReport validate_against_trace(const ValidationSetup& setup, const Backend& candidate, const Trace& reference,
                                        const std::string& reference_name, const TolerancePolicy& policy) {
  if (setup.prompt != reference.prompt) throw Error("validation: the run's prompt is not the trace's (" + reference_name + ")");
  if (reference.steps.empty()) throw Error(reference_name + " records no steps; there is nothing to validate against");
  check_exactness_contract(reference, reference_name);
  ValidationReport report;
  report.candidate = candidate.name;
  report.reference = reference_name;
  Reference ref;
  ref.trace = &reference;
  return run_validation(setup, candidate, ref, std::move(report), policy);
}

}  // namespace specdec::validation
