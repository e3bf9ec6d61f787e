#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/peagle_proposer.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/drafting/head_candidates.hpp"

namespace specdec {

std::string peagle_shape_name(PEagleShape shape) { return shape == PEagleShape::chain ? "chain" : "tree"; }

PEagleShape parse_peagle_shape(const std::string& name) {
  if (name == "chain") return PEagleShape::chain;
  if (name == "tree") return PEagleShape::tree;
  throw Error("unknown P-EAGLE draft shape '" + name + "'; expected chain or tree");
}

PEagleProposer::PEagleProposer(const EagleHead& head, PEagleOptions options, int cache_capacity)
    : head_(head), options_(std::move(options)) {
  const EagleHeadConfig& c = head.config();
  const std::string who = "peagle " + peagle_shape_name(options_.shape);
  if (c.kind != EagleKind::peagle) {
    throw Error(who + ": the head is an " + eagle_kind_name(c.kind) + " head; parallel drafting needs a P-EAGLE head "
                "(mask token and mask_hidden)");
  }
  if (options_.shape == PEagleShape::chain) {
    if (options_.k < 1) throw Error(who + ": K must be >= 1 (got " + std::to_string(options_.k) + ")");
    check_draft_limit(who, "K", options_.k, kMaxDraftDepth);
    depth_ = options_.k;
    max_nodes_ = options_.k;
  } else {
    shape_ = make_tree_shape(options_.choices, who + " choices");
    if (shape_.max_rank() >= c.draft_vocab) {
      throw Error(who + ": the tree uses candidate rank " + std::to_string(shape_.max_rank()) + " but the drafter's vocabulary has only " +
                  std::to_string(c.draft_vocab) + " tokens (ranks must be < " + std::to_string(c.draft_vocab) + ")");
    }
    depth_ = shape_.max_depth();
    max_nodes_ = shape_.size();
  }
  if (c.trained_depth > 0 && depth_ > c.trained_depth && !options_.force) {
    throw Error(who + ": " + std::to_string(depth_) + " parallel positions requested but the head was trained for at most " +
                std::to_string(c.trained_depth) + "; positions beyond it are untrained (lower K, or allow them with --force-depth, force_depth in a method spec)");
  }
  pairs_.emplace(head, cache_capacity, depth_ - 1, who);
}

std::string PEagleProposer::name() const { return "peagle-" + peagle_shape_name(options_.shape); }

Proposal PEagleProposer::propose(const DraftContext& ctx) {
  try {
    // The policy's depth budget drafts fewer parallel positions (fewer mask slots).
    const int K = step_depth(ctx, depth_);
    const int Vd = head_.config().draft_vocab;
    Proposal p;
    EagleHead::Input in = pairs_->catch_up(ctx, K - 1);
    const int real = static_cast<int>(in.tokens.size());
    // Append the K − 1 mask slots: mask token, mask_hidden (goes through fc), next positions.
    const Vector& mask_hidden = head_.mask_hidden();
    in.features.conservativeResize(real + K - 1, Eigen::NoChange);  // features: (real + K − 1, F)
    for (int j = 1; j < K; ++j) {
      in.tokens.push_back(head_.config().mask_token_id);
      in.positions.push_back(ctx.committed - 1 + j);
      in.features.row(real - 1 + j) = mask_hidden.transpose();
    }
    for (int j = 0; j < K; ++j) in.logit_rows.push_back(real - 1 + j);  // row j: draft j + 1
    const EagleHead::Output out = head_.forward(pairs_->cache(), in);  // logits: (K, Vd)
    p.drafter_forwards = 1;
    pairs_->caught_up(ctx);
    pairs_->roll_back();  // the mask slots' entries

    if (options_.shape == PEagleShape::chain) {
      std::vector<int32_t> chain;
      for (int j = 0; j < K; ++j) {
        // Draft j + 1 sits at absolute position committed + 1 + j, the key of its random draws.
        const uint32_t position = static_cast<uint32_t>(ctx.committed + 1 + j);
        // All positions come from one forward: a stop only shortens what the target verifies.
        const double top = ctx.stop ? top_probability(out.logits.row(j).data(), Vd) : 0.0;
        if (ctx.stop && !ctx.stop->draft_at(j + 1, top)) break;
        DraftChoice c = choose_head_token(head_, out.logits.row(j).data(), ctx.sampling, ctx.sequence_id, position);
        chain.push_back(c.token);
        if (!c.q.empty()) p.draft_probs.push_back(std::move(c.q));
        if (ctx.stop) {
          p.confidences.push_back(head_confidence(head_, out.logits.row(j).data(), c.token));
          if (!ctx.stop->draft_after(j + 1, p.confidences.back(), top)) break;
        }
      }
      if (!p.draft_probs.empty()) p.draft_probs.emplace_back();  // after the last node: no children
      p.tree = DraftTree::chain(std::move(chain));
      return p;
    }
    // Tree: the candidates of each parallel position, as many as the tree's ranks at that depth.
    const TreeShape shape = K < shape_.max_depth() ? shape_.truncated(K) : shape_;
    std::vector<std::vector<int32_t>> ranked(static_cast<size_t>(K));
    for (int d = 1; d <= K; ++d) {
      int need = 0;
      for (int n = 0; n < shape.size(); ++n)
        if (shape.depths[n] == d) need = std::max(need, shape.ranks[n] + 1);
      ranked[static_cast<size_t>(d - 1)] = ranked_candidates(out.logits.row(d - 1).data(), Vd, need);
    }
    for (int n = 0; n < shape.size(); ++n) {
      p.tree.tokens.push_back(head_.to_target(ranked[static_cast<size_t>(shape.depths[n] - 1)][static_cast<size_t>(shape.ranks[n])]));
    }
    p.tree.parents = shape.parents;
    return p;
  } catch (...) {
    pairs_->reset();
    throw;
  }
}

}  // namespace specdec
