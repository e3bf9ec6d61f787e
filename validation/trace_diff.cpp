// specdec trace diff: two traces compared step by step under the tolerance policy
// (validation/trace_diff.hpp).
#include "validation/trace_diff.hpp"

#include <cmath>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "reference/methods/method_spec.hpp"
#include "reference/policies/policy_spec.hpp"
#include "reference/sampling/sampling_params.hpp"
#include "validation/drafter_rows.hpp"
#include "validation/layer_departure.hpp"
#include "validation/row_comparison.hpp"
#include "traces/trace_compare.hpp"

namespace specdec::validation {
namespace {

template <class T> std::string list(const std::vector<T>& v) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << +v[i];
  o << "]";
  return o.str();
}

std::vector<double> softmax(const std::vector<float>& logq) {
  double m = -INFINITY;
  for (float x : logq) m = std::max(m, static_cast<double>(x));
  std::vector<double> p(logq.size());
  double z = 0;
  for (std::size_t i = 0; i < logq.size(); ++i) z += p[i] = std::isfinite(m) ? std::exp(static_cast<double>(logq[i]) - m) : 0.0;
  for (double& x : p) x = z > 0 ? x / z : 0.0;
  return p;
}

class Differ {
 public:
  Differ(const Trace& a, const Trace& b, const TolerancePolicy& p) : a_(a), b_(b), policy_(p) {
    r_.steps_a = static_cast<int>(a.steps.size());
    r_.steps_b = static_cast<int>(b.steps.size());
    q_logits_ = {"target logits, full rows", "NMSE per row", p.logits_nmse};
    q_topk_ = {"target logits, top-k rows", "NMSE over the reference's top-k entries", p.logits_nmse};
    q_lse_ = {"logsumexp, top-k rows", "absolute difference", p.logsumexp_abs};
    q_draft_ = {"sampled draft distributions q", "max absolute difference", p.draft_probability_abs};
    q_features_ = {"drafter features", "NMSE per row", p.hidden_nmse};
    q_drafter_hidden_ = {"drafter hidden states", "NMSE per row", p.hidden_nmse};
    q_drafter_logits_ = {"drafter logits", "NMSE per row", p.logits_nmse};
  }

  TraceDiffReport run() {
    const std::size_t n = std::min(a_.steps.size(), b_.steps.size());
    for (std::size_t s = 0; s < n && !r_.first_divergence; ++s) {
      if (step(static_cast<int>(s))) {
        ++r_.steps_compared;
        r_.tokens_equal += static_cast<int>(a_.steps[s].emitted_tokens.size());
      }
    }
    if (!r_.first_divergence && a_.steps.size() != b_.steps.size()) {
      Divergence d;
      d.step = static_cast<int>(n);
      d.what = "steps";
      d.detail = "A has " + std::to_string(a_.steps.size()) + " steps, B " + std::to_string(b_.steps.size());
      r_.first_divergence = d;
    }
    if (!r_.first_divergence && a_.prompt != b_.prompt) fail(-1, "step field", "prompts differ: " + list(a_.prompt) + " vs " + list(b_.prompt));
    if (!r_.first_divergence && a_.output != b_.output) fail(-1, "step field", "outputs differ");
    if (!r_.first_divergence && a_.stop_reason != b_.stop_reason) fail(-1, "step field", "stop reasons differ: " + a_.stop_reason + " vs " + b_.stop_reason);
    if (a_.drafter_io.present && b_.drafter_io.present) {
      for (const StepRecord& step : b_.steps) r_.drafter_rows.recorded += static_cast<long>(step.drafter_tokens.size());
      if (!r_.first_divergence) r_.first_divergence = all_passed_over(r_.drafter_rows);
    }
    for (QuantitySummary* q : {&q_logits_, &q_topk_, &q_lse_, &q_draft_, &q_features_, &q_drafter_hidden_, &q_drafter_logits_}) {
      if (q->compared > 0) r_.quantities.push_back(*q);
    }
    r_.same = !r_.first_divergence;
    return r_;
  }

 private:
  void fail(int s, const std::string& what, const std::string& detail, double value = kUnknown, double bound = kUnknown, int row = -1) {
    if (r_.first_divergence) return;
    Divergence d;
    d.step = s;
    d.what = what;
    d.detail = detail;
    d.value = value;
    d.bound = bound;
    d.row = row;
    if (s >= 0) {
      d.position = static_cast<int32_t>(a_.steps[static_cast<std::size_t>(s)].position);
      d.reference_emitted = a_.steps[static_cast<std::size_t>(s)].emitted_tokens;
      d.candidate_emitted = b_.steps[static_cast<std::size_t>(s)].emitted_tokens;
      const auto& ea = d.reference_emitted;
      const auto& eb = d.candidate_emitted;
      for (std::size_t i = 0; i < std::max(ea.size(), eb.size()); ++i) {
        const int32_t x = i < ea.size() ? ea[i] : -1, y = i < eb.size() ? eb[i] : -1;
        if (x != y) {
          d.reference_token = x;
          d.candidate_token = y;
          break;
        }
      }
    }
    r_.first_divergence = d;
  }

  void measure(QuantitySummary& q, double v, int s, int row) { measure_at(q, v, "step " + std::to_string(s) + " row " + std::to_string(row)); }
  void measure_at(QuantitySummary& q, double v, const std::string& at) {
    ++q.compared;
    if (v <= q.bound) ++q.passed;
    if (!(v <= q.worst) && !std::isnan(q.worst)) {  // a NaN is the worst and stays so
      q.worst = v;
      q.worst_at = at;
    }
    if (!(v <= q.bound)) q.pass = false;
  }

  // Both traces record step s's drafter rows: compared row by row as validate --candidate
  // compares them (B the candidate), up to the first row fed a token of B's diverged draft.
  bool drafter_rows(int s, const StepRecord& x, const StepRecord& y) {
    if (!a_.drafter_io.present || !b_.drafter_io.present) return true;
    const std::vector<DrafterRow> ra = trace_drafter_rows(a_, x), rb = trace_drafter_rows(b_, y);
    if (ra.empty() || rb.empty()) return true;
    const bool differ = first_differing_field({StepFieldId::draft_tokens, StepFieldId::draft_parents}, x, y) != nullptr;
    const std::vector<int32_t> diverged(y.draft_tokens.begin() + static_cast<std::ptrdiff_t>(first_differing_node(x, y)), y.draft_tokens.end());
    const DrafterComparison c = compare_drafter_rows(rb, ra, policy_, differ ? &diverged : nullptr,
                                                     [&](const std::string& q, double v, const std::string& at) {
                                                       QuantitySummary& sum = q == "drafter features" ? q_features_
                                                                              : q == "drafter hidden states" ? q_drafter_hidden_
                                                                                                             : q_drafter_logits_;
                                                       measure_at(sum, v, "step " + std::to_string(s) + " " + at);
                                                     });
    r_.drafter_rows.compared += c.rows_compared;
    r_.drafter_rows.passed += c.rows_passed;
    r_.drafter_rows.passed_over += c.unpaired;
    if (!c.mismatch) return true;
    const DrafterMismatch& m = *c.mismatch;
    fail(s, m.what, m.detail, m.value, m.bound, m.row);
    r_.first_divergence->drafter_call = m.call;
    if (m.position >= 0) r_.first_divergence->position = static_cast<int32_t>(m.position);
    return false;
  }

  // After a target-logits failure at step s, when both traces record the same per-layer rows: the
  // first layer and sub-step, in forward order, whose state differs beyond the hidden-state bound.
  void localise(int s) {
    const auto departure = trace_layer_departure(a_, b_, static_cast<std::size_t>(s), policy_.hidden_nmse);
    if (!departure) return;
    Divergence& d = *r_.first_divergence;
    d.layer = departure->layer;
    d.substep = departure->substep;
    d.layer_row = departure->row;
    d.layer_value = departure->nmse;
  }

  // Exact step fields (traces/trace_compare.hpp) in the order given, each with the kind of
  // divergence a difference in it is: the first that differs fails, described by the table.
  bool exact(int s, const StepRecord& x, const StepRecord& y, std::initializer_list<std::pair<StepFieldId, const char*>> fields) {
    for (const auto& [id, what] : fields) {
      const StepField& f = step_field(id);
      if (same_field(f, x, y)) continue;
      fail(s, what, difference_sentence(f, x, y));
      return false;
    }
    return true;
  }

  // Rows of one logits group (A reference, B candidate).
  bool logits(int s, const std::vector<LogitRecord>& ra, const std::vector<LogitRecord>& rb, bool draft) {
    if (ra.empty() || rb.empty()) return true;  // one trace did not record them: nothing to compare
    if (ra.size() != rb.size()) {
      fail(s, draft ? "draft distributions" : "target logits", std::to_string(ra.size()) + " rows vs " + std::to_string(rb.size()));
      return false;
    }
    for (std::size_t i = 0; i < ra.size(); ++i) {
      const LogitRecord& x = ra[i];
      const LogitRecord& y = rb[i];
      const int row = static_cast<int>(i);
      if (draft) {
        if (x.is_full() && y.is_full() && x.full.size() == y.full.size()) {
          const auto p = softmax(x.full), q = softmax(y.full);
          double worst = 0;
          for (std::size_t j = 0; j < p.size(); ++j) worst = std::max(worst, std::abs(p[j] - q[j]));
          measure(q_draft_, worst, s, row);
          if (worst > policy_.draft_probability_abs) {
            fail(s, "draft distributions", "draft row " + std::to_string(row) + ": max |dq| " + std::to_string(worst), worst, policy_.draft_probability_abs, row);
            return false;
          }
        } else if (!x.is_full() && !y.is_full() && x.summary.topk_ids != y.summary.topk_ids) {
          fail(s, "draft distributions", "draft row " + std::to_string(row) + ": top-k ids differ", kUnknown, kUnknown, row);
          return false;
        }
        continue;
      }
      if (x.is_full() && y.is_full()) {
        if (x.full.size() != y.full.size()) {
          fail(s, "target logits", "row " + std::to_string(row) + ": " + std::to_string(x.full.size()) + " vs " + std::to_string(y.full.size()) + " logits", kUnknown, kUnknown, row);
          return false;
        }
        const RowDifference d = compare_rows(y.full.data(), x.full.data(), static_cast<int>(x.full.size()));
        measure(q_logits_, d.nmse, s, row);
        if (!(d.nmse <= policy_.logits_nmse)) {
          fail(s, "target logits", "row " + std::to_string(row) + ": NMSE " + std::to_string(d.nmse) + " above the bound", d.nmse, policy_.logits_nmse, row);
          return false;
        }
        continue;
      }
      // At least one summary: compare against the reference's top-k.
      LogitSummary ref = x.is_full() ? summarize_logits(x.full.data(), static_cast<int>(x.full.size()), static_cast<int>(y.summary.topk_ids.size())) : x.summary;
      if (y.is_full()) {
        const SummaryDifference d = compare_to_summary(y.full.data(), static_cast<int>(y.full.size()), ref);
        measure(q_topk_, d.topk.nmse, s, row);
        measure(q_lse_, d.logsumexp_abs, s, row);
        if (!(d.topk.nmse <= policy_.logits_nmse) || !(d.logsumexp_abs <= policy_.logsumexp_abs)) {
          fail(s, "target logits", "row " + std::to_string(row) + ": top-k NMSE " + std::to_string(d.topk.nmse) + ", |dlogsumexp| " + std::to_string(d.logsumexp_abs), d.topk.nmse, policy_.logits_nmse, row);
          return false;
        }
        continue;
      }
      const LogitSummary& cand = y.summary;
      if (cand.topk_ids != ref.topk_ids) {
        fail(s, "target logits", "row " + std::to_string(row) + ": top-k ids differ: " + list(ref.topk_ids) + " vs " + list(cand.topk_ids), kUnknown, kUnknown, row);
        return false;
      }
      const RowDifference d = compare_rows(cand.topk_values.data(), ref.topk_values.data(), static_cast<int>(ref.topk_values.size()));
      const double lse = std::abs(cand.logsumexp - ref.logsumexp);
      measure(q_topk_, d.nmse, s, row);
      measure(q_lse_, lse, s, row);
      if (!(d.nmse <= policy_.logits_nmse) || !(lse <= policy_.logsumexp_abs)) {
        fail(s, "target logits", "row " + std::to_string(row) + ": top-k NMSE " + std::to_string(d.nmse) + ", |dlogsumexp| " + std::to_string(lse), d.nmse, policy_.logits_nmse, row);
        return false;
      }
    }
    return true;
  }

  bool step(int s) {
    using Id = StepFieldId;
    const StepRecord& x = a_.steps[static_cast<std::size_t>(s)];
    const StepRecord& y = b_.steps[static_cast<std::size_t>(s)];
    // The order of specdec validate: drafter rows, drafts, target logits, token decisions, other fields.
    if (!drafter_rows(s, x, y)) return false;
    if (!exact(s, x, y, {{Id::draft_tokens, "draft"}, {Id::draft_parents, "draft"}})) return false;
    if (!logits(s, x.draft_logits, y.draft_logits, true)) return false;
    if (!logits(s, x.target_logits, y.target_logits, false)) {
      localise(s);
      return false;
    }
    return exact(s, x, y,
                 {{Id::accept_decisions, "token"}, {Id::accepted_path, "token"}, {Id::emitted_tokens, "token"}, {Id::bonus_token, "token"},
                  {Id::position, "step field"}, {Id::accept_nodes, "step field"}, {Id::accept_uniforms, "step field"},
                  {Id::random_counters, "step field"}});
  }

  const Trace& a_;
  const Trace& b_;
  const TolerancePolicy& policy_;
  TraceDiffReport r_;
  QuantitySummary q_logits_, q_topk_, q_lse_, q_draft_, q_features_, q_drafter_hidden_, q_drafter_logits_;
};

}  // namespace

TraceDiffReport diff_traces(const Trace& a, const Trace& b, const TolerancePolicy& policy) {
  TraceDiffReport r = Differ(a, b, policy).run();
  r.config_differences = config_differences(a, b);
  return r;
}

std::vector<std::string> config_differences(const Trace& a, const Trace& b) {
  std::vector<std::string> out;
  const auto parsed = [](const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() || !j.is_object() ? nlohmann::json::object() : j;
  };
  // Each value readable when it parses, else as its JSON.
  const auto readable = [](const nlohmann::json& j, auto&& show) {
    try {
      return show(j);
    } catch (const std::exception&) {
      return j.dump();
    }
  };
  const auto differ = [&](const std::string& what, const nlohmann::json& x, const nlohmann::json& y, auto&& show) {
    if (x != y) out.push_back(what + ": " + readable(x, show) + " vs " + readable(y, show));
  };
  const nlohmann::json sa = parsed(a.meta.sampling_json), sb = parsed(b.meta.sampling_json);
  differ("sampling", sa, sb, [](const nlohmann::json& j) { return j.get<SamplingParams>().to_string(); });
  const nlohmann::json ca = parsed(a.meta.config_json), cb = parsed(b.meta.config_json);
  const auto field = [](const nlohmann::json& j, const char* key) { return j.contains(key) ? j.at(key) : nlohmann::json(); };
  differ("method shape", field(ca, "method"), field(cb, "method"), [](const nlohmann::json& j) {
    const std::string shape = method_from_json(j, "method").shape();
    return shape.empty() ? std::string("(none)") : shape;
  });
  differ("policy", field(ca, "policy"), field(cb, "policy"),
         [](const nlohmann::json& j) { return j.is_null() ? std::string("fixed") : policy_from_json(j, "policy").label(); });
  for (const char* key : {"max_new_tokens", "stop_at_eos"}) {
    differ(key, field(ca, key), field(cb, key), [](const nlohmann::json& j) { return j.dump(); });
  }
  for (const auto& [role, model] : a.meta.models) {
    const auto it = b.meta.models.find(role);
    if (it != b.meta.models.end() && it->second.fingerprint != model.fingerprint) {
      out.push_back(role + " weights: " + model.fingerprint + " vs " + it->second.fingerprint);
    }
  }
  return out;
}

nlohmann::json to_json(const TraceDiffReport& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"result", r.same ? "same" : "divergent"}, {"steps_a", r.steps_a}, {"steps_b", r.steps_b},
                      {"steps_compared", r.steps_compared}, {"tokens_equal", r.tokens_equal}};
  j["drafter_rows"] = to_json(r.drafter_rows);
  j["config_differences"] = r.config_differences;
  j["quantities"] = nlohmann::json::array();
  for (const QuantitySummary& q : r.quantities) {
    j["quantities"].push_back({{"quantity", q.quantity}, {"rule", q.rule}, {"bound", q.bound}, {"worst", num(q.worst)},
                               {"worst_at", q.worst_at}, {"compared", q.compared}, {"passed", q.passed}, {"pass", q.pass}});
  }
  if (r.first_divergence) {
    const Divergence& d = *r.first_divergence;
    j["first_divergence"] = {{"step", d.step}, {"position", d.position}, {"what", d.what}, {"detail", d.detail}, {"row", d.row},
                             {"a_token", d.reference_token}, {"b_token", d.candidate_token}, {"value", num(d.value)},
                             {"bound", num(d.bound)}, {"a_emitted", d.reference_emitted}, {"b_emitted", d.candidate_emitted},
                             {"drafter_call", d.drafter_call < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.drafter_call)},
                             {"layer", d.layer < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.layer)},
                             {"substep", d.substep.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.substep)},
                             {"layer_row", d.layer_row < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.layer_row)},
                             {"layer_nmse", num(d.layer_value)}};
  } else {
    j["first_divergence"] = nullptr;
  }
  return j;
}

}  // namespace specdec::validation
