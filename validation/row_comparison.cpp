#include "validation/row_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/core/error.hpp"

namespace specdec::validation {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Accumulator {
  double err = 0, ref = 0, max_abs = 0;
  bool broken = false;
  void add(float c, float r) {
    if (c == r || (std::isnan(c) && std::isnan(r))) {
      if (std::isfinite(r)) ref += static_cast<double>(r) * r;
      return;
    }
    if (!std::isfinite(c) || !std::isfinite(r)) {
      broken = true;
      max_abs = kInf;
      return;
    }
    const double d = static_cast<double>(c) - static_cast<double>(r);
    err += d * d;
    ref += static_cast<double>(r) * r;
    max_abs = std::max(max_abs, std::abs(d));
  }
  RowDifference result() const {
    if (broken) return {kInf, kInf};
    return {ref > 0 ? err / ref : err, max_abs};
  }
};

void check_summary(int V, const LogitSummary& s) {
  if (s.vocab_size != V) {
    throw Error("validation: a recorded top-k row has vocab_size " + std::to_string(s.vocab_size) + "; the backend's row has " +
                std::to_string(V) + " logits");
  }
  if (s.topk_ids.empty() || s.topk_ids.size() != s.topk_values.size()) {
    throw Error("validation: a recorded top-k row has " + std::to_string(s.topk_ids.size()) + " ids and " +
                std::to_string(s.topk_values.size()) + " values; expected k >= 1 of each");
  }
  for (int32_t id : s.topk_ids)
    if (id < 0 || id >= V) throw Error("validation: a recorded top-k id " + std::to_string(id) + " is outside [0, " + std::to_string(V) + ")");
}

}  // namespace

RowDifference compare_rows(const float* candidate, const float* reference, int n) {
  Accumulator a;
  for (int i = 0; i < n; ++i) a.add(candidate[i], reference[i]);
  return a.result();
}

SummaryDifference compare_to_summary(const float* candidate, int V, const LogitSummary& reference) {
  check_summary(V, reference);
  SummaryDifference d;
  Accumulator a;
  std::vector<char> in_topk(static_cast<size_t>(V), 0);
  for (size_t i = 0; i < reference.topk_ids.size(); ++i) {
    a.add(candidate[reference.topk_ids[i]], reference.topk_values[i]);
    in_topk[static_cast<size_t>(reference.topk_ids[i])] = 1;
  }
  d.topk = a.result();
  const double kth = reference.topk_values.back();
  for (int i = 0; i < V; ++i) {
    if (in_topk[static_cast<size_t>(i)]) continue;
    const double excess = static_cast<double>(candidate[i]) - kth;
    if (std::isnan(excess)) d.outside_excess = kInf;
    else d.outside_excess = std::max(d.outside_excess, excess);
  }
  const LogitSummary mine = summarize_logits(candidate, V, static_cast<int>(reference.topk_ids.size()));
  d.logsumexp_abs = mine.logsumexp == reference.logsumexp ? 0.0 : std::abs(mine.logsumexp - reference.logsumexp);
  if (std::isnan(d.logsumexp_abs)) d.logsumexp_abs = kInf;
  return d;
}

std::vector<float> forced_row_from_summary(const float* candidate, int V, const LogitSummary& reference) {
  check_summary(V, reference);
  std::vector<float> row(candidate, candidate + V);
  const float kth = reference.topk_values.back();
  for (float& v : row) v = std::min(v, kth);
  for (size_t i = 0; i < reference.topk_ids.size(); ++i) row[static_cast<size_t>(reference.topk_ids[i])] = reference.topk_values[i];
  return row;
}

}  // namespace specdec::validation
