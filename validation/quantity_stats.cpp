// The quantities validate measures and their worst values (validation/quantity_stats.hpp).
#include "validation/quantity_stats.hpp"

#include <cmath>

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

}  // namespace

void QuantityStats::clear_step(int step, bool keep_target_logits) {
  for (auto& [q, steps] : data_) {
    const bool logits = q == "target logits" || q == "target logits (top-k)" || q == "top-k membership" || q == "logsumexp";
    if (!(keep_target_logits && logits)) steps.erase(step);
  }
  drafter_rows_.erase(step);
}

DrafterRowCounts QuantityStats::drafter_rows() const {
  DrafterRowCounts sum;
  for (const auto& [step, c] : drafter_rows_) {
    sum.compared += c.compared;
    sum.passed += c.passed;
    sum.passed_over += c.passed_over;
  }
  return sum;
}

void QuantityStats::add(const std::string& quantity, int step, double value, const std::string& at) {
  Entry& e = data_[quantity][step];
  if (e.values.empty() || value > e.worst || std::isnan(value)) {
    e.worst = value;
    e.at = at;
  }
  e.values.push_back(value);
}

std::vector<QuantitySummary> QuantityStats::summary(const TolerancePolicy& policy) const {
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
      q.compared += static_cast<long>(e.values.size());
      for (double v : e.values) q.passed += v <= info.bound ? 1 : 0;  // NaN is never within
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

}  // namespace specdec::validation
