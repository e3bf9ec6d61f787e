#pragma once
// An EagleHeadEngine wrapper for validation: every head forward goes to the head it wraps (on
// that head's own engine) and what went in and came out is kept, stamped with the step being
// drafted, so that a candidate trace's recorded drafter inputs and outputs (traces/SCHEMA.md,
// "Drafter inputs and outputs") can be compared row by row with the reference's.
#include <memory>
#include <vector>

#include "reference/drafters/eagle_head.hpp"

namespace specdec::validation {

struct HeadForwardRecord {
  int step = 0;                     // the step being drafted (ForcedProposer's count)
  std::vector<int32_t> tokens;      // (T) target-vocabulary ids fed in
  std::vector<int32_t> positions;   // (T) absolute positions (resolved when the input left them implicit)
  Matrix features;                  // (T, F) as fed in
  std::vector<uint8_t> projected;   // (T) 1 where the row skipped fc; empty = none
  std::vector<int> logit_rows;      // rows whose logits came back, in the order of `logits`
  Matrix logits;                    // (R, Vd) over the draft vocabulary
  Matrix hidden;                    // (T, H) the last layer's output before the final norm
};

class ObservedHeadEngine final : public EagleHeadEngine {
 public:
  // `head` is copied (its weights are shared); `step` must outlive the wrapper.
  ObservedHeadEngine(const EagleHead& head, const int* step) : inner_(head), step_(step) {}

  std::string name() const override { return inner_.engine() ? inner_.engine()->name() : "reference"; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const override;

  const std::vector<HeadForwardRecord>& records() const { return records_; }

 private:
  EagleHead inner_;
  const int* step_;
  mutable std::vector<HeadForwardRecord> records_;
};

// `head` computing as before, its forwards kept by `observer` (made here and returned through it).
EagleHead observe_head(const EagleHead& head, const int* step, std::shared_ptr<const ObservedHeadEngine>& observer);

}  // namespace specdec::validation
