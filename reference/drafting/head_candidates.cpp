#include "reference/drafting/head_candidates.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "reference/core/error.hpp"

namespace specdec {

DraftChoice choose_head_token(const EagleHead& head, const float* draft_logits, const SamplingParams& sampling,
                              uint32_t sequence_id, uint32_t position) {
  const int V = head.config().target_vocab;
  const int Vd = head.config().draft_vocab;
  if (Vd == V && head.weights().d2t.empty()) return choose_draft_token(draft_logits, V, sampling, sequence_id, position);
  std::vector<float> full(static_cast<size_t>(V), -std::numeric_limits<float>::infinity());  // full: (V)
  for (int d = 0; d < Vd; ++d) full[static_cast<size_t>(head.to_target(d))] = draft_logits[d];
  return choose_draft_token(full.data(), V, sampling, sequence_id, position);
}

double head_confidence(const EagleHead& head, const float* draft_logits, int32_t target_token) {
  const int Vd = head.config().draft_vocab;
  for (int d = 0; d < Vd; ++d) {
    if (head.to_target(d) == target_token) return draft_confidence(draft_logits, Vd, d);
  }
  throw Error("head confidence: token " + std::to_string(target_token) + " is outside the head's draft vocabulary");
}

std::vector<int32_t> ranked_candidates(const float* logits, int n, int count) {
  if (count < 0 || count > n) {
    throw Error("ranked candidates: asked for " + std::to_string(count) + " of " + std::to_string(n) + " tokens");
  }
  for (int i = 0; i < n; ++i) {
    if (std::isnan(logits[i])) throw Error("ranked candidates: the drafter produced a NaN logit at id " + std::to_string(i));
  }
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + count, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  ids.resize(static_cast<size_t>(count));
  return ids;
}

std::vector<double> log_softmax(const float* logits, int n) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) m = std::max(m, static_cast<double>(logits[i]));
  if (!std::isfinite(m)) throw Error("log_softmax: the drafter's logits have no finite maximum");
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  const double log_sum = std::log(sum);  // >= 0: the maximum contributes exp(0) = 1
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = (static_cast<double>(logits[i]) - m) - log_sum;
  return out;
}

}  // namespace specdec
