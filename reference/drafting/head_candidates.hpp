#pragma once
// Turning an EAGLE-family head's logits (over its draft vocabulary) into draft tokens of the
// target vocabulary: sampled choices for chains, ranked candidates for trees.
#include <cstdint>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/proposer.hpp"

namespace specdec {

// choose_draft_token over the target vocabulary: the Vd draft logits are placed at their target
// ids and every other token gets −inf. Greedy picks the same token as an argmax over the draft
// vocabulary; coupled sampling uses the target's Gumbel noise of the same token ids (so it agrees
// with the target whenever their distributions do); sample mode returns q over the target
// vocabulary, zero outside the draft vocabulary, as the acceptor compares q with p there.
DraftChoice choose_head_token(const EagleHead& head, const float* draft_logits, const SamplingParams& sampling,
                              uint32_t sequence_id, uint32_t position);

// draft_confidence over the head's draft vocabulary, of the target token it drafted.
double head_confidence(const EagleHead& head, const float* draft_logits, int32_t target_token);

// Draft ids of the `count` largest of n logits, best first, ties to the lower id (count <= n).
std::vector<int32_t> ranked_candidates(const float* logits, int n, int count);

// log(softmax(logits)) in double, without temperature (EAGLE-2's tree scores). Every value is
// <= 0, so a child's cumulative score never exceeds its parent's.
std::vector<double> log_softmax(const float* logits, int n);

}  // namespace specdec
