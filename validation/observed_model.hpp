#pragma once
// A LanguageModel wrapper for validation: it passes every forward to the backend it wraps,
// records what came back (so two backends can be compared forward by forward), and can replace
// the logits of chosen forwards with given rows. The replacement is how the comparison "forces
// the reference token" after a near-tie: the decoding algorithm then decides from the
// reference's logits, and every later step continues from the reference's path.
#include <map>
#include <vector>

#include "reference/model/language_model.hpp"

namespace specdec::validation {

struct ForwardRecord {
  int step = 0;                     // the decoding step the forward belongs to
  std::vector<int32_t> tokens;      // (T) the request's tokens
  std::vector<int32_t> positions;   // (T) the request's positions (empty = continuing the cache)
  int cache_length = 0;             // cache length before the forward
  std::vector<int> logit_rows;      // the rows whose logits came back, in the order of `logits`
  Matrix logits;                    // (R, V) as the backend returned them; empty unless kept
  Matrix final_hidden, aux_hidden;  // as returned (empty when not requested)
  std::vector<Matrix> layer_states; // ForwardResult::layer_states, when the wrapper asks for them

  // Same input: tokens, positions and cache length.
  bool same_request(const ForwardRecord& other) const;
};

class ObservedModel final : public LanguageModel {
 public:
  // `inner` must outlive this wrapper. Forwards are stamped with *step when `step` is given
  // (drafter forwards: the step being drafted), else with their index (target forwards: forward
  // i is step i, the prefill being step 0).
  // With `layer_states`, every forward also asks the backend for its per-layer states and keeps
  // them (for localising a divergence); the caller's results are unchanged.
  ObservedModel(const LanguageModel& inner, bool keep_logits, const int* step = nullptr, bool layer_states = false);

  const ModelConfig& config() const override { return inner_.config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override;

  // The logits forward `index` returns instead of the backend's (the backend still runs, and
  // its own outputs are what is recorded). Shape must match: (logit_rows, V).
  void replace_logits(int index, Matrix logits) { replacements_[index] = std::move(logits); }

  const std::vector<ForwardRecord>& records() const { return records_; }

 private:
  const LanguageModel& inner_;
  bool keep_logits_;
  const int* step_;
  bool layer_states_;
  std::map<int, Matrix> replacements_;
  mutable std::vector<ForwardRecord> records_;
};

}  // namespace specdec::validation
