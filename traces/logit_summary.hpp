#pragma once
// A compact, checkable stand-in for one row of logits when storing all V values is too large:
// the top-k entries, the log-partition function and a checksum of the exact fp32 row. Recorders
// and trace comparisons use the same definition, so a summary computed on any backend can be
// checked against the reference bit for bit.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace specdec {

struct LogitSummary {
  int32_t vocab_size = 0;            // V of the row that was summarized
  std::vector<int32_t> topk_ids;     // (k) token ids, by descending logit, ties by lower id
  std::vector<float> topk_values;    // (k) the logits of topk_ids
  double logsumexp = 0.0;            // log Σ exp(x), computed in double, shifted by the max
  uint64_t checksum = 0;             // fnv1a64_floats over the whole row
};

// FNV-1a 64-bit hash (offset basis 14695981039346656037, prime 1099511628211) of n floats taken
// as little-endian IEEE-754 binary32 bytes, whatever the host byte order.
uint64_t fnv1a64_floats(const float* data, std::size_t n);

// Summarizes row: (V). k is clamped to V; throws specdec::Error if V < 1 or k < 1.
// NaN logits sort below every number (they are never preferred over a real logit); a row
// containing NaN has a NaN logsumexp. An all −inf row has logsumexp −inf.
LogitSummary summarize_logits(const float* row, int V, int k);

}  // namespace specdec
