#pragma once
// Numeric comparison of one row (logits, hidden state) of a backend against the reference's,
// in full or against a trace's top-k summary, as the tolerance policy measures it.
#include <vector>

#include "traces/logit_summary.hpp"

namespace specdec::validation {

struct RowDifference {
  // Σ(c − r)² / Σ r² over the entries compared (infinite when a non-finite value differs; the
  // plain squared error when the reference row is all zeros).
  double nmse = 0;
  double max_abs = 0;  // max |c − r|
};
// Full rows of n values. Entries equal in both (including equal infinities) contribute nothing.
RowDifference compare_rows(const float* candidate, const float* reference, int n);

struct SummaryDifference {
  RowDifference topk;           // over the reference's top-k ids
  double outside_excess = 0;    // max over ids outside the reference's top-k of (c − k-th value), or 0
  double logsumexp_abs = 0;     // |Δ logsumexp|
};
// A full candidate row of V values against a recorded summary of the reference row.
SummaryDifference compare_to_summary(const float* candidate, int V, const LogitSummary& reference);

// A row that makes the reference's top-k decisions: the candidate row with the reference's
// top-k entries put in and every other entry capped at the reference's k-th value. Greedy picks
// the reference's token from it; other modes approximately.
std::vector<float> forced_row_from_summary(const float* candidate, int V, const LogitSummary& reference);

}  // namespace specdec::validation
