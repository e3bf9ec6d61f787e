#include "reference/drafting/eagle_pair_cache.hpp"

#include <algorithm>

#include "reference/core/error.hpp"

namespace specdec {

EaglePairCache::EaglePairCache(const EagleHead& head, int capacity, int draft_slots, std::string who)
    : head_(head), who_(std::move(who)), capacity_(capacity) {
  if (capacity < 2) {
    throw Error(who_ + ": the drafter cache capacity must cover at least 2 tokens (prompt + generated), got " +
                std::to_string(capacity));
  }
  cache_ = head.new_cache(capacity + draft_slots);
}

EagleHead::Input EaglePairCache::catch_up(const DraftContext& ctx, int extra_slots) {
  if (!ctx.sequence || ctx.sequence->empty() || ctx.committed != static_cast<int>(ctx.sequence->size()) - 1) {
    throw Error(who_ + ": the draft context must hold the sequence with committed = its length - 1");
  }
  const std::vector<int32_t>& seq = *ctx.sequence;
  const int committed = ctx.committed;
  if (committed < 1) throw Error(who_ + ": nothing is committed yet; the prompt must hold at least one token");
  const bool final = head_.config().reads_final_hidden();
  const Matrix* src = final ? ctx.final_hidden : ctx.aux_hidden;
  const int width = head_.config().feature_width();
  const std::string what = final ? "the target's final hidden states" : "the target's aux hidden states";
  if (!src || src->rows() < committed || src->cols() != width) {
    throw Error(who_ + ": " + what + " in the draft context are missing or too small (" +
                (src ? std::to_string(src->rows()) + " x " + std::to_string(src->cols()) : std::string("absent")) +
                "); expected at least " + std::to_string(committed) + " rows of width " + std::to_string(width) +
                " (the target forward must return what wants_final_hidden / wanted_aux_layers ask for)");
  }
  if (committed + extra_slots > cache_->capacity()) {
    throw Error(who_ + ": the sequence holds " + std::to_string(seq.size()) + " tokens and a proposal needs " +
                std::to_string(extra_slots) + " more drafter slots, beyond the drafter cache (" +
                std::to_string(capacity_) + " tokens); create the proposer with a capacity of at least prompt + new tokens");
  }

  // Keep the pairs whose tokens (and hence target features) are still those of the sequence; the
  // last pair is always recomputed so that its logits are available.
  size_t match = 0;
  while (match < covered_.size() && match < seq.size() && covered_[match] == seq[match]) ++match;
  const int keep = std::max(0, std::min({static_cast<int>(match) - 1, pairs(), committed - 1}));
  cache_->truncate(keep);
  covered_.resize(keep == 0 ? 0 : static_cast<size_t>(keep) + 1);

  EagleHead::Input in;
  const int rows = committed - keep;
  in.features.resize(rows, width);  // features: (rows, F)
  for (int i = keep; i < committed; ++i) {
    in.tokens.push_back(seq[static_cast<size_t>(i) + 1]);
    in.positions.push_back(i);
    in.features.row(i - keep) = src->row(i);
  }
  return in;
}

void EaglePairCache::caught_up(const DraftContext& ctx) {
  covered_.assign(ctx.sequence->begin(), ctx.sequence->end());  // sequence[0, committed]
}

void EaglePairCache::roll_back() { cache_->truncate(pairs()); }

void EaglePairCache::reset() {
  cache_->truncate(0);
  covered_.clear();
}

}  // namespace specdec
