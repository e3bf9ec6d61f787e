#include "traces/logit_summary.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

#include "reference/core/error.hpp"
#include "reference/io/fingerprint.hpp"

namespace specdec {

uint64_t fnv1a64_floats(const float* data, std::size_t n) {
  // The in-memory bytes are the little-endian bytes: specdec's I/O refuses to build on
  // big-endian hosts (reference/io/safetensors.cpp).
  Fnv1a64 h;
  if (n) h.update(data, n * sizeof(float));
  return h.value();
}

LogitSummary summarize_logits(const float* row, int V, int k) {
  if (V < 1) throw Error("summarize_logits: vocabulary size is " + std::to_string(V) + ", expected at least 1");
  if (k < 1) throw Error("summarize_logits: top-k is " + std::to_string(k) + ", expected at least 1");
  k = std::min(k, V);

  // Strict weak order: larger logit first, NaN last, equal logits by lower id.
  auto before = [row](int32_t a, int32_t b) {
    const float x = row[a], y = row[b];
    const bool xn = std::isnan(x), yn = std::isnan(y);
    if (xn != yn) return yn;
    if (!xn && x != y) return x > y;
    return a < b;
  };
  std::vector<int32_t> ids(static_cast<std::size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), before);

  LogitSummary s;
  s.vocab_size = V;
  s.topk_ids.assign(ids.begin(), ids.begin() + k);
  for (int32_t id : s.topk_ids) s.topk_values.push_back(row[id]);

  // Max-shifted, summed in index order so the value does not depend on how the row was produced.
  double m = -INFINITY;
  bool has_nan = false;
  for (int i = 0; i < V; ++i) {
    if (std::isnan(row[i])) has_nan = true;
    else m = std::max(m, static_cast<double>(row[i]));
  }
  if (has_nan) {
    s.logsumexp = NAN;
  } else if (std::isinf(m)) {
    s.logsumexp = m;  // all −inf, or some +inf
  } else {
    double sum = 0.0;
    for (int i = 0; i < V; ++i) sum += std::exp(static_cast<double>(row[i]) - m);
    s.logsumexp = m + std::log(sum);
  }
  s.checksum = fnv1a64_floats(row, static_cast<std::size_t>(V));
  return s;
}

}  // namespace specdec
