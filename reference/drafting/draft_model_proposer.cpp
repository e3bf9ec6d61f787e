#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/draft_model_proposer.hpp"

#include "reference/core/error.hpp"

namespace specdec {

DraftModelProposer::DraftModelProposer(const LanguageModel& draft, const ModelConfig& target, int k, int cache_capacity)
    : draft_(draft), k_(k) {
  if (k < 1) throw Error("draft: K must be >= 1 (got " + std::to_string(k) + ")");
  check_draft_limit("draft", "K", k, kMaxDraftDepth);
  if (draft.config().vocab_size != target.vocab_size) {
    throw Error("draft: the draft model's vocabulary (" + std::to_string(draft.config().vocab_size) +
                " tokens) differs from the target's (" + std::to_string(target.vocab_size) +
                "); draft-model speculation needs a shared vocabulary");
  }
  cache_ = draft.new_cache(cache_capacity + k);
}

Proposal DraftModelProposer::propose(const DraftContext& ctx) {
  const std::vector<int32_t>& seq = *ctx.sequence;
  // Keep the cached entries that still match the sequence (accepted drafts), drop the rest.
  size_t keep = 0;
  // The pending token is always fed: its logits give the first draft.
  while (keep < cached_.size() && keep + 1 < seq.size() && cached_[keep] == seq[keep]) ++keep;
  cache_->truncate(static_cast<int>(keep));
  cached_.resize(keep);

  Proposal p;
  std::vector<int32_t> feed(seq.begin() + static_cast<std::ptrdiff_t>(keep), seq.end());  // catch up, ending with the pending token
  const int V = draft_.config().vocab_size;
  std::vector<int32_t> chain;
  const int K = step_depth(ctx, k_);
  for (int i = 0; i < K; ++i) {
    ForwardRequest r;
    r.tokens = feed;
    r.logit_rows = {static_cast<int>(feed.size()) - 1};
    const Matrix logits = draft_.forward(*cache_, r).logits;  // (1, V)
    ++p.drafter_forwards;
    cached_.insert(cached_.end(), feed.begin(), feed.end());
    const uint32_t position = static_cast<uint32_t>(seq.size() + i);
    const double top = ctx.stop ? top_probability(logits.data(), V) : 0.0;
    if (ctx.stop && !ctx.stop->draft_at(i + 1, top)) break;
    DraftChoice c = choose_draft_token(logits.data(), V, ctx.sampling, ctx.sequence_id, position);
    chain.push_back(c.token);
    if (!c.q.empty()) p.draft_probs.push_back(std::move(c.q));
    if (ctx.stop) {
      p.confidences.push_back(draft_confidence(logits.data(), V, c.token));
      if (!ctx.stop->draft_after(i + 1, p.confidences.back(), top)) break;
    }
    feed = {c.token};  // the last draft needs no forward: nothing is drafted after it
  }
  if (!p.draft_probs.empty()) p.draft_probs.emplace_back();  // after the last node: no children
  p.tree = DraftTree::chain(std::move(chain));
  return p;
}

}  // namespace specdec
