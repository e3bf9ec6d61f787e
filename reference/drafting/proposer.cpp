#include "reference/drafting/proposer.hpp"

#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

DraftChoice choose_draft_token(const float* logits, int vocab, const SamplingParams& sampling, uint32_t sequence_id,
                               uint32_t position) {
  DraftChoice c;
  if (sampling.mode == SamplingParams::Mode::sample) {
    c.q = probabilities(logits, vocab, sampling);
    c.token = sample_from(c.q, uniform(sampling.seed, sequence_id, position, RandomPurpose::draft, 0));
  } else {
    c.token = sample_token(logits, vocab, sampling, sequence_id, position);
  }
  return c;
}

}  // namespace specdec
