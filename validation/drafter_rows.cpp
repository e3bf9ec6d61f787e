#include "validation/drafter_rows.hpp"

#include <algorithm>
#include "validation/row_comparison.hpp"
#include "reference/core/format.hpp"

namespace specdec::validation {

namespace {

std::string g(double v) { return format_brief(v); }

// Row t's logits, when the forward returned them: logits row j is input row logit_rows[j].
void attach_logits(DrafterRow& r, const std::vector<int>& logit_rows, const Matrix& logits, size_t t) {
  const auto it = std::find(logit_rows.begin(), logit_rows.end(), static_cast<int>(t));
  if (it == logit_rows.end() || logits.rows() != static_cast<Eigen::Index>(logit_rows.size())) return;
  r.logits = logits.row(static_cast<Eigen::Index>(it - logit_rows.begin())).data();
  r.vocab = static_cast<int>(logits.cols());
}

}  // namespace

std::size_t first_differing_node(const StepRecord& a, const StepRecord& b) {
  std::size_t n = 0;
  while (n < a.draft_tokens.size() && n < b.draft_tokens.size() && a.draft_tokens[n] == b.draft_tokens[n] &&
         a.draft_parents[n] == b.draft_parents[n])
    ++n;
  return n;
}

std::vector<DrafterRow> trace_drafter_rows(const Trace& trace, const StepRecord& step) {
  std::vector<DrafterRow> rows;
  const DrafterIOLayout& io = trace.drafter_io;
  if (!io.present) return rows;
  const size_t n = step.drafter_tokens.size();
  for (size_t i = 0; i < n; ++i) {
    DrafterRow r;
    r.call = i < step.drafter_calls.size() ? step.drafter_calls[i] : 0;
    r.token = step.drafter_tokens[i];
    r.position = i < step.drafter_positions.size() ? step.drafter_positions[i] : -1;
    if (io.feature_size > 0 && step.drafter_features.size() == n * static_cast<size_t>(io.feature_size))
      r.features = step.drafter_features.data() + i * io.feature_size, r.feature_width = static_cast<int>(io.feature_size);
    if (io.hidden_size > 0 && step.drafter_hidden.size() == n * static_cast<size_t>(io.hidden_size))
      r.hidden = step.drafter_hidden.data() + i * io.hidden_size, r.hidden_width = static_cast<int>(io.hidden_size);
    if (io.vocab_size > 0 && step.drafter_logits.size() == n * static_cast<size_t>(io.vocab_size))
      r.logits = step.drafter_logits.data() + i * io.vocab_size, r.vocab = static_cast<int>(io.vocab_size);
    rows.push_back(r);
  }
  return rows;
}

std::vector<DrafterRow> live_drafter_rows(int step, const std::vector<HeadForwardRecord>& head,
                                          const std::vector<ForwardRecord>& draft_lm) {
  std::vector<DrafterRow> rows;
  int call = 0;
  for (const HeadForwardRecord& f : head) {
    if (f.step != step) continue;
    for (size_t t = 0; t < f.tokens.size(); ++t) {
      DrafterRow r;
      r.call = call;
      r.token = f.tokens[t];
      r.position = f.positions[t];
      r.features = f.features.row(static_cast<Eigen::Index>(t)).data();
      r.feature_width = static_cast<int>(f.features.cols());
      r.projected = !f.projected.empty() && f.projected[t] != 0;
      r.hidden = f.hidden.row(static_cast<Eigen::Index>(t)).data();
      r.hidden_width = static_cast<int>(f.hidden.cols());
      attach_logits(r, f.logit_rows, f.logits, t);
      rows.push_back(r);
    }
    ++call;
  }
  if (!rows.empty()) return rows;
  for (const ForwardRecord& f : draft_lm) {
    if (f.step != step) continue;
    for (size_t t = 0; t < f.tokens.size(); ++t) {
      DrafterRow r;
      r.call = call;
      r.token = f.tokens[t];
      r.position = f.positions.empty() ? f.cache_length + static_cast<int64_t>(t) : f.positions[t];
      attach_logits(r, f.logit_rows, f.logits, t);
      rows.push_back(r);
    }
    ++call;
  }
  return rows;
}

DrafterComparison compare_drafter_rows(const std::vector<DrafterRow>& candidate, const std::vector<DrafterRow>& reference,
                                       const TolerancePolicy& policy, const std::vector<int32_t>* diverged_tokens,
                                       const std::function<void(const std::string&, double, const std::string&)>& record) {
  DrafterComparison out;
  // Rows are named as the candidate's trace numbers them.
  auto where = [&](size_t i) {
    const DrafterRow& c = candidate[i];
    return "drafter row " + std::to_string(i) + " (forward " + std::to_string(c.call) + " of the step, token " +
           std::to_string(c.token) + " at position " + std::to_string(c.position) + ")";
  };
  auto mismatch = [&](const std::string& what, size_t i, double value, double bound, const std::string& detail) {
    DrafterMismatch m;
    m.what = what;
    m.row = static_cast<int>(i);
    m.call = candidate[i].call;
    m.position = candidate[i].position;
    m.value = value;
    m.bound = bound;
    m.detail = detail;
    out.mismatch = m;
    return out;
  };
  // Engines may order or group their drafter forwards differently: a candidate row is paired with
  // the reference's first unpaired row fed the same token at the same position.
  std::vector<bool> paired(reference.size(), false);
  auto counterpart = [&](const DrafterRow& c) -> const DrafterRow* {
    for (size_t j = 0; j < reference.size(); ++j) {
      if (paired[j] || reference[j].token != c.token || reference[j].position != c.position) continue;
      paired[j] = true;
      return &reference[j];
    }
    return nullptr;
  };
  for (size_t i = 0; i < candidate.size(); ++i) {
    const DrafterRow& c = candidate[i];
    const DrafterRow* found = counterpart(c);
    if (!found) {
      if (!diverged_tokens) {
        ++out.unpaired;  // the drafts agree: a row of another drafting schedule, nothing to compare
        continue;
      }
      // Fed a token of the candidate's own draft: the drafts parted here.
      if (std::find(diverged_tokens->begin(), diverged_tokens->end(), c.token) != diverged_tokens->end()) return out;
      return mismatch("drafter inputs", i, kUnknown, kUnknown,
                      where(i) + ": the reference's drafter was fed no such row, so the differing draft cannot be "
                                 "shown to come from the same inputs");
    }
    const DrafterRow& r = *found;
    ++out.rows_compared;
    if (c.features && r.features) {
      // A fed-back row of the reference (projected) carries its H-wide state in the first columns.
      const int width = r.projected ? std::min(c.feature_width, r.feature_width) : r.feature_width;
      if (c.feature_width < width || (!r.projected && c.feature_width != r.feature_width)) {
        return mismatch("drafter inputs", i, kUnknown, kUnknown,
                        where(i) + ": the candidate's feature row has " + std::to_string(c.feature_width) + " values, the reference's " +
                            std::to_string(r.feature_width));
      }
      const RowDifference d = compare_rows(c.features, r.features, width);
      record("drafter features", d.nmse, where(i));
      if (!(d.nmse <= policy.hidden_nmse)) {
        return mismatch("drafter inputs", i, d.nmse, policy.hidden_nmse,
                        where(i) + ": the feature row fed in has NMSE " + g(d.nmse) + ", beyond the bound " + g(policy.hidden_nmse) +
                            " (the drafter was given other target states)");
      }
    }
    // The drafter's outputs, once its inputs agree: a departure is the drafter computing differently.
    struct Output {
      const char* what;
      const char* quantity;
      const char* noun;
      const float *cand, *ref;
      int cand_width, ref_width;
      double bound;
    };
    for (const Output& o : {Output{"drafter hidden", "drafter hidden states", "hidden state", c.hidden, r.hidden, c.hidden_width,
                                   r.hidden_width, policy.hidden_nmse},
                            Output{"drafter logits", "drafter logits", "logits", c.logits, r.logits, c.vocab, r.vocab, policy.logits_nmse}}) {
      if (!o.cand || !o.ref) continue;
      if (o.cand_width != o.ref_width) {
        return mismatch(o.what, i, kUnknown, kUnknown,
                        where(i) + ": the candidate's drafter " + o.noun + " row has " + std::to_string(o.cand_width) +
                            " values, the reference's " + std::to_string(o.ref_width));
      }
      const RowDifference d = compare_rows(o.cand, o.ref, o.ref_width);
      record(o.quantity, d.nmse, where(i));
      if (!(d.nmse <= o.bound)) {
        return mismatch(o.what, i, d.nmse, o.bound,
                        where(i) + ": the NMSE of the drafter's " + o.noun + " is " + g(d.nmse) + ", beyond the bound " + g(o.bound) +
                            ", while its inputs agree (the drafter computes differently)");
      }
    }
    ++out.rows_passed;
  }
  return out;
}

}  // namespace specdec::validation
