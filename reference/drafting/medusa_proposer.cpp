#include "reference/drafting/medusa_proposer.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/head_candidates.hpp"

namespace specdec {

std::string medusa_shape_name(MedusaShape shape) { return shape == MedusaShape::chain ? "chain" : "tree"; }

MedusaProposer::MedusaProposer(const MedusaHeads& heads, MedusaOptions options)
    : heads_(heads), options_(std::move(options)) {
  const MedusaConfig& c = heads.config();
  const std::string who = "medusa " + medusa_shape_name(options_.shape);
  if (options_.shape == MedusaShape::chain) {
    if (options_.k < 1) throw Error(who + ": K must be >= 1 (got " + std::to_string(options_.k) + ")");
    check_draft_limit(who, "K", options_.k, kMaxDraftDepth);
    depth_ = std::min(options_.k, c.num_heads);  // one head per depth: no head drafts beyond K heads
    max_nodes_ = depth_;
    return;
  }
  shape_ = make_tree_shape(options_.choices, who + " choices");
  if (shape_.max_depth() > c.num_heads) {
    throw Error(who + ": the tree is " + std::to_string(shape_.max_depth()) + " deep but the checkpoint has " +
                std::to_string(c.num_heads) + " Medusa heads (head d drafts depth d + 1; give a tree at most " +
                std::to_string(c.num_heads) + " deep)");
  }
  if (shape_.max_rank() >= c.vocab) {
    throw Error(who + ": the tree uses candidate rank " + std::to_string(shape_.max_rank()) + " but the vocabulary has only " +
                std::to_string(c.vocab) + " tokens (ranks must be < " + std::to_string(c.vocab) + ")");
  }
  depth_ = shape_.max_depth();
  max_nodes_ = shape_.size();
}

std::string MedusaProposer::name() const { return "medusa-" + medusa_shape_name(options_.shape); }

Proposal MedusaProposer::propose(const DraftContext& ctx) {
  if (!ctx.final_hidden) throw Error(name() + ": the target's final hidden states were not given (the proposer wants them)");
  if (ctx.committed < 1 || ctx.final_hidden->rows() < ctx.committed) {
    throw Error(name() + ": the target's final hidden states cover " + std::to_string(ctx.final_hidden->rows()) +
                " rows; drafting after " + std::to_string(ctx.committed) + " committed tokens reads row " +
                std::to_string(ctx.committed - 1));
  }
  // The policy's depth budget: fewer heads run (a prefix of the tree's depths).
  const int depth = step_depth(ctx, depth_);
  const Matrix h = ctx.final_hidden->row(ctx.committed - 1);  // (1, H): produced the pending token
  const std::vector<Matrix> logits = heads_.forward(h, depth);  // depth × (1, V): head d − 1 drafts depth d
  Proposal p = options_.shape == MedusaShape::chain ? propose_chain(ctx, logits) : propose_tree(ctx, logits);
  p.drafter_forwards = 1;
  return p;
}

Proposal MedusaProposer::propose_chain(const DraftContext& ctx, const std::vector<Matrix>& logits) const {
  const int V = heads_.config().vocab;
  Proposal p;
  std::vector<int32_t> chain;
  for (std::size_t j = 0; j < logits.size(); ++j) {
    const int depth = static_cast<int>(j) + 1;
    const float* row = logits[j].data();
    // Draft j + 1 sits at absolute position committed + 1 + j, the key of its random draws.
    const uint32_t position = static_cast<uint32_t>(ctx.committed + depth);
    // Every depth came from the one forward: a stop only shortens what the target verifies.
    const double top = ctx.stop ? top_probability(row, V) : 0.0;
    if (ctx.stop && !ctx.stop->draft_at(depth, top)) break;
    DraftChoice c = choose_draft_token(row, V, ctx.sampling, ctx.sequence_id, position);
    chain.push_back(c.token);
    if (!c.q.empty()) p.draft_probs.push_back(std::move(c.q));
    if (ctx.stop) {
      p.confidences.push_back(draft_confidence(row, V, c.token));
      if (!ctx.stop->draft_after(depth, p.confidences.back(), top)) break;
    }
  }
  if (!p.draft_probs.empty()) p.draft_probs.emplace_back();  // after the last node: no children
  p.tree = DraftTree::chain(std::move(chain));
  return p;
}

Proposal MedusaProposer::propose_tree(const DraftContext&, const std::vector<Matrix>& logits) const {
  const int V = heads_.config().vocab;
  const int depth = static_cast<int>(logits.size());
  const TreeShape shape = depth < shape_.max_depth() ? shape_.truncated(depth) : shape_;
  // Head d − 1's candidates, as many as the tree's ranks at depth d.
  std::vector<std::vector<int32_t>> ranked(static_cast<std::size_t>(depth));
  for (int d = 1; d <= depth; ++d) {
    int need = 0;
    for (int n = 0; n < shape.size(); ++n)
      if (shape.depths[static_cast<std::size_t>(n)] == d) need = std::max(need, shape.ranks[static_cast<std::size_t>(n)] + 1);
    ranked[static_cast<std::size_t>(d - 1)] = ranked_candidates(logits[static_cast<std::size_t>(d - 1)].data(), V, need);
  }
  Proposal p;
  for (int n = 0; n < shape.size(); ++n) {
    const std::size_t d = static_cast<std::size_t>(shape.depths[static_cast<std::size_t>(n)] - 1);
    p.tree.tokens.push_back(ranked[d][static_cast<std::size_t>(shape.ranks[static_cast<std::size_t>(n)])]);
  }
  p.tree.parents = shape.parents;
  return p;
}

}  // namespace specdec
