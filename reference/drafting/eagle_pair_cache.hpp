#pragma once
// The EAGLE-family drafter's own KV cache, holding entries only for committed pairs: drafter
// position i pairs the target's feature f_i with the token t_{i+1} (and predicts t_{i+2}). Drafted
// entries are computed from predicted features, so they are dropped after every proposal
// (REFERENCES.md, EAGLE "KV fix"); the next proposal catches up the newly committed pairs.
#include <memory>
#include <string>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/proposer.hpp"

namespace specdec {

class EaglePairCache {
 public:
  // `capacity`: the longest sequence (prompt + generated tokens) to be drafted for; `draft_slots`:
  // the most drafted entries one proposal appends on top of the committed pairs.
  EaglePairCache(const EagleHead& head, int capacity, int draft_slots, std::string who);

  // The rows that bring the cache up to the committed pairs (f_i, t_{i+1}), i < context.committed:
  // cached entries that still match the sequence are kept, the rest dropped; the last pair
  // (f_{committed−1}, pending) is always among the rows (recomputed if it was cached), so the
  // caller can ask for its logits. Rows carry tokens, features (the target's final hidden state for
  // EAGLE-1, else its aux states) and positions i; `extra_slots` is what the caller will append
  // after them (checked against the capacity). Throws if the context lacks the features.
  EagleHead::Input catch_up(const DraftContext& context, int extra_slots);
  // Call after the catch-up rows went through the head: the cache now holds every committed pair.
  void caught_up(const DraftContext& context);
  // Drops every entry beyond the committed pairs (the drafted ones).
  void roll_back();
  // Forgets everything (after a failed proposal the cache content is unknown).
  void reset();

  KVCache& cache() { return *cache_; }
  const KVCache& cache() const { return *cache_; }
  // Number of committed pairs the cache holds entries for (its length between proposals).
  int pairs() const { return covered_.empty() ? 0 : static_cast<int>(covered_.size()) - 1; }
  // The tokens those pairs cover: sequence[0, pairs] (empty when there are none).
  const std::vector<int32_t>& covered_tokens() const { return covered_; }

 private:
  const EagleHead& head_;
  std::string who_;
  std::unique_ptr<KVCache> cache_;
  int capacity_;
  std::vector<int32_t> covered_;
};

}  // namespace specdec
