#include "reference/drafting/ngram_proposer.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/drafting/draft_limits.hpp"

namespace specdec {

NgramProposer::NgramProposer(NgramOptions o) : options_(o) {
  const std::string who = name();
  if (o.k < 1) throw Error(who + ": K must be >= 1 (got " + std::to_string(o.k) + ")");
  check_draft_limit(who, "K", o.k, kMaxDraftDepth);
  if (o.n_min < 1 || o.n_max < o.n_min) {
    throw Error(who + ": the n-gram sizes must satisfy 1 <= n_min <= n_max (got n_min " + std::to_string(o.n_min) +
                ", n_max " + std::to_string(o.n_max) + ")");
  }
  if (o.rule == NgramOptions::Rule::tree) {
    if (o.breadth < 1 || o.max_nodes < 1) throw Error(who + ": breadth and nodes must be >= 1");
    check_draft_limit(who, "nodes", o.max_nodes, kMaxDraftNodes);
  }
}

Proposal NgramProposer::propose(const DraftContext& ctx) {
  if (!ctx.sequence || ctx.sequence->empty()) throw Error(name() + ": no sequence to draft after");
  const std::span<const int32_t> history(*ctx.sequence);
  const int k = step_depth(ctx, options_.k);
  Proposal p;
  if (options_.rule == NgramOptions::Rule::tree) {
    NgramTree t = ngram_tree_lookup(history, options_.n_min, options_.n_max, k, options_.breadth, options_.max_nodes);
    p.tree = std::move(t.tree);
    p.sources = std::move(t.sources);
    return p;
  }
  const NgramMatch m = options_.rule == NgramOptions::Rule::vllm
                           ? vllm_ngram_lookup(history, options_.n_min, options_.n_max, k, options_.max_model_len)
                           : hf_prompt_lookup(history, options_.n_max, k, ctx.max_length, options_.eos);
  for (std::size_t i = 0; i < m.tokens.size(); ++i)
    p.sources.push_back({DraftSource::Origin::context, m.start + static_cast<int64_t>(i), m.length, -1});
  p.tree = DraftTree::chain(m.tokens);
  return p;
}

}  // namespace specdec
