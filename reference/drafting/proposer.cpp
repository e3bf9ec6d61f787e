#include "reference/drafting/proposer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/core/error.hpp"

#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

DraftChoice choose_draft_token(const float* logits, int vocab, const SamplingParams& sampling, uint32_t sequence_id,
                               uint32_t position) {
  for (int i = 0; i < vocab; ++i) {
    if (std::isnan(logits[i]) || logits[i] == std::numeric_limits<float>::infinity()) {
      throw Error("the drafter produced a non-finite logit (" + std::to_string(logits[i]) + ") at token " +
                  std::to_string(i) + " for position " + std::to_string(position));
    }
  }
  DraftChoice c;
  if (sampling.mode == SamplingParams::Mode::sample) {
    c.q = probabilities(logits, vocab, sampling);
    c.token = sample_from(c.q, uniform(sampling.seed, sequence_id, position, RandomPurpose::draft, 0));
  } else {
    c.token = sample_token(logits, vocab, sampling, sequence_id, position);
  }
  return c;
}

double draft_confidence(const float* logits, int vocab, int32_t token) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < vocab; ++i) m = std::max(m, static_cast<double>(logits[i]));
  if (!std::isfinite(m)) throw Error("draft confidence: the drafter's logits have no finite maximum");
  double sum = 0.0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  return std::exp(static_cast<double>(logits[token]) - m) / sum;
}

int step_depth(const DraftContext& context, int k) { return context.max_depth > 0 ? std::min(k, context.max_depth) : k; }

double top_probability(const float* logits, int vocab) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < vocab; ++i) m = std::max(m, static_cast<double>(logits[i]));
  if (!std::isfinite(m)) throw Error("draft confidence: the drafter's logits have no finite maximum");
  double sum = 0.0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  return 1.0 / sum;
}

}  // namespace specdec
