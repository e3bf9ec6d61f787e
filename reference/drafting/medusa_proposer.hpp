#pragma once
// Medusa drafting (Cai et al. 2024; REFERENCES.md): one forward of the Medusa heads on the
// target's final hidden state at position committed − 1 (the state whose target logits produced
// the pending token) drafts every depth at once: head d − 1 gives the distribution of depth d.
//
//   chain  K' = min(K, num_heads) tokens, depth d chosen from head d − 1 by choose_draft_token at
//          absolute position committed + d (greedy argmax; coupled and sampled drafts keyed by that
//          position, sampled ones carrying q), honouring the policy's depth budget and stop rule.
//   tree   a static tree from a choices list, built as Medusa's generate_candidates builds its
//          Cartesian tree: the node at depth d with rank r is the r-th candidate of head d − 1
//          (its top-k, ties to the lower id), whatever its parent; deterministic.
//
// Drafts never feed back, so there is no drafter cache and nothing to roll back.
#include <string>
#include <vector>

#include "reference/drafters/medusa_heads.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/drafting/tree_choices.hpp"

namespace specdec {

enum class MedusaShape { chain, tree };

// "chain" | "tree"
std::string medusa_shape_name(MedusaShape shape);

struct MedusaOptions {
  MedusaShape shape = MedusaShape::chain;
  int k = 4;             // chain: drafts per step (>= 1); the heads draft at most num_heads of them
  TreeChoices choices;   // tree: paths of per-head candidate ranks, no deeper than num_heads
};

class MedusaProposer final : public Proposer {
 public:
  // `heads` must outlive the proposer. Throws on K < 1, an empty or malformed tree, a tree deeper
  // than the heads or ranks beyond the vocabulary.
  MedusaProposer(const MedusaHeads& heads, MedusaOptions options);

  std::string name() const override;  // "medusa-chain" | "medusa-tree"
  bool wants_final_hidden() const override { return true; }
  int max_nodes() const override { return max_nodes_; }
  int max_depth() const override { return depth_; }
  Proposal propose(const DraftContext& context) override;

  const MedusaHeads& heads() const { return heads_; }
  const MedusaOptions& options() const { return options_; }

 private:
  Proposal propose_chain(const DraftContext& context, const std::vector<Matrix>& logits) const;
  Proposal propose_tree(const DraftContext& context, const std::vector<Matrix>& logits) const;

  const MedusaHeads& heads_;
  MedusaOptions options_;
  TreeShape shape_;  // tree only
  int depth_ = 0;    // deepest draft: chain K', tree depth
  int max_nodes_ = 0;
};

}  // namespace specdec
