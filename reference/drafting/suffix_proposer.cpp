#include "reference/drafting/suffix_proposer.hpp"

#include <algorithm>
#include <mutex>

#include "reference/core/error.hpp"
#include "reference/drafting/draft_limits.hpp"

namespace specdec {

SuffixResponses::SuffixResponses(int max_depth, int max_cached) : tree_(max_depth), max_cached_(max_cached) {
  if (max_cached < 0) throw Error("suffix: cached requests must be >= 0 (got " + std::to_string(max_cached) + ")");
}

int64_t SuffixResponses::start() {
  std::unique_lock lock(mutex_);
  return next_++;
}

void SuffixResponses::finish(int64_t id, std::span<const int32_t> response) {
  if (max_cached_ == 0) return;
  std::unique_lock lock(mutex_);
  tree_.extend(id, response);
  cached_.push_back(id);
  while (static_cast<int>(cached_.size()) > max_cached_) {
    tree_.remove(cached_.front());
    cached_.pop_front();
  }
}

SuffixProposer::SuffixProposer(SuffixOptions o, std::shared_ptr<SuffixResponses> responses)
    : options_(o), responses_(std::move(responses)), local_(o.max_depth), own_(o.max_depth) {
  const std::string who = name();
  if (o.k < 1) throw Error(who + ": K (max_spec_tokens) must be >= 1 (got " + std::to_string(o.k) + ")");
  check_draft_limit(who, "K", o.k, kMaxDraftNodes);
  if (o.max_depth < 1) throw Error(who + ": tree_depth must be >= 1");
  if (responses_ && responses_->tree().max_depth() != o.max_depth) {
    throw Error(who + ": the run's response tree has depth " + std::to_string(responses_->tree().max_depth()) +
                ", this sequence's " + std::to_string(o.max_depth));
  }
  if (responses_) id_ = responses_->start();
}

SuffixProposer::~SuffixProposer() {
  if (!responses_ || seen_.empty()) return;
  const auto from = static_cast<std::ptrdiff_t>(std::min<std::size_t>(prompt_length_, seen_.size()));
  responses_->finish(id_, std::span<const int32_t>(seen_.data() + from, seen_.size() - static_cast<std::size_t>(from)));
}

Proposal SuffixProposer::propose(const DraftContext& ctx) {
  if (!ctx.sequence || ctx.sequence->empty()) throw Error(name() + ": no sequence to draft after");
  const std::vector<int32_t>& seq = *ctx.sequence;
  if (seen_.empty()) {
    prompt_length_ = std::clamp(ctx.prompt_length, 0, static_cast<int>(seq.size()));
    local_.extend(0, std::span<const int32_t>(seq.data(), static_cast<std::size_t>(prompt_length_)));
    seen_.assign(seq.begin(), seq.begin() + prompt_length_);
  }
  if (seq.size() < seen_.size() || !std::equal(seen_.begin(), seen_.end(), seq.begin())) {
    throw Error(name() + ": the sequence no longer extends the tokens drafted from (emitted tokens cannot change)");
  }
  for (std::size_t i = seen_.size(); i < seq.size(); ++i) {  // the output since the last step
    local_.append(0, seq[i]);
    own_.append(0, seq[i]);
    seen_.push_back(seq[i]);
  }

  SuffixSpeculation how;
  // vLLM's SuffixDecodingProposer: min(K, max_model_len − L − 1), one less than its n-gram rule allows.
  const int64_t left = options_.max_model_len > 0 ? static_cast<int64_t>(options_.max_model_len) - static_cast<int64_t>(seq.size()) - 1 : options_.k;
  how.max_spec_tokens = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(step_depth(ctx, options_.k), left)));
  how.spec_factor = options_.spec_factor;
  how.spec_offset = options_.spec_offset;
  how.min_token_prob = options_.min_token_prob;
  how.tree = options_.tree;
  const std::size_t n = std::min(seq.size(), static_cast<std::size_t>(options_.max_depth));
  const std::span<const int32_t> pattern(seq.data() + (seq.size() - n), n);

  SuffixDraft best = speculate({&local_}, pattern, how);
  bool from_responses = false;
  if (responses_ && responses_->max_cached() > 0) {
    std::shared_lock lock(responses_->mutex());
    SuffixDraft r = speculate({&responses_->tree(), &own_}, pattern, how);
    if (r.score > best.score) best = std::move(r), from_responses = true;
  }

  Proposal p;
  p.tree.tokens = best.tokens;
  p.tree.parents = best.parents;
  for (std::size_t i = 0; i < best.tokens.size(); ++i) {
    DraftSource s;
    s.match_length = best.match_length;
    const SuffixRef& r = best.refs[i];
    if (!from_responses) {
      s.position = r.index;  // the local tree holds one sequence: this one
    } else if (r.tree == 0 && r.seq >= 0) {
      s.origin = DraftSource::Origin::responses;
      s.request = r.seq;
      s.position = r.index;
    } else {
      s.position = r.index < 0 ? -1 : r.index + prompt_length_;  // this sequence's own output
    }
    p.sources.push_back(s);
  }
  if (static_cast<int>(p.tree.tokens.size()) > max_nodes()) throw Error(name() + ": drafted more than K nodes");
  return p;
}

}  // namespace specdec
