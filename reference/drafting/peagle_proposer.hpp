#pragma once
// P-EAGLE parallel drafting (REFERENCES.md, FORMATS.md): one drafter forward per step over
// [catch-up real pairs..., K − 1 mask slots] under ordinary causal attention. The last real slot
// (f_{committed−1}, pending token) gives the logits of draft 1, mask slot j those of draft j + 1.
// Mask slots carry the mask token and the learned mask_hidden (through fc); their positions
// continue the real ones by one. Their KV entries are rolled back afterwards.
#include <optional>
#include <string>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/eagle_pair_cache.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/drafting/tree_choices.hpp"

namespace specdec {

enum class PEagleShape {
  chain,  // K tokens, draft j chosen by choose_draft_token from parallel position j
  tree,   // Medusa-style: the rank-r child at depth d is the rank-r candidate of position d,
          // whatever its parent; deterministic
};

// "chain" | "tree"
std::string peagle_shape_name(PEagleShape shape);
// Inverse of peagle_shape_name; throws specdec::Error listing the accepted names.
PEagleShape parse_peagle_shape(const std::string& name);

struct PEagleOptions {
  PEagleShape shape = PEagleShape::chain;
  int k = 4;                             // chain: parallel depth K >= 1 (tree: the tree's depth)
  TreeChoices choices = mc_sim_7b_63();  // tree: paths of per-position candidate ranks
  // Allow K beyond the head's trained depth (config().trained_depth, when known).
  bool force = false;
};

class PEagleProposer final : public Proposer {
 public:
  // `head` (P-EAGLE) must outlive the proposer. `cache_capacity`: the longest sequence (prompt +
  // generated tokens) it will draft for. Throws on invalid options, a K beyond the trained depth
  // without `force`, tree ranks beyond the draft vocabulary, or a head of another kind.
  PEagleProposer(const EagleHead& head, PEagleOptions options, int cache_capacity);

  std::string name() const override;  // "peagle-chain" | "peagle-tree"
  std::vector<int> wanted_aux_layers() const override { return head_.config().aux_layers; }
  int max_nodes() const override { return max_nodes_; }
  int max_depth() const override { return depth_; }
  Proposal propose(const DraftContext& context) override;

  // Parallel positions drafted per step (chain: K; tree: its depth).
  int parallel_depth() const { return depth_; }
  const EagleHead& head() const { return head_; }
  const PEagleOptions& options() const { return options_; }
  // The drafter cache; between proposals it holds exactly the committed pairs.
  const EaglePairCache& pair_cache() const { return *pairs_; }

 private:
  const EagleHead& head_;
  PEagleOptions options_;
  TreeShape shape_;  // tree only
  int depth_ = 0;
  int max_nodes_ = 0;
  std::optional<EaglePairCache> pairs_;
};

}  // namespace specdec
