#pragma once
// Draft trees: the shape (which candidates are drafted) and the expected tokens a tree step emits
// under an acceptance model. Node 0 is the root (the last accepted token) and is not stored.
#include <string>
#include <vector>

#include "simulator/acceptance.hpp"

namespace specdec::sim {

struct TreeShape {
  // Non-root nodes, parents before children. parent = -1 means the root.
  std::vector<int> parent;
  std::vector<int> rank;   // 0 = the drafter's top candidate among its siblings
  std::vector<int> depth;  // 1-based

  int num_nodes() const { return int(parent.size()); }  // excludes the root
  int max_depth() const;
  int nodes_at_depth(int d) const;
  int num_leaves() const;  // nodes without children: the root-to-leaf paths
};

// From EAGLE/Medusa-style choices: each entry is a path of sibling ranks from the root, e.g.
// [[0], [1], [0, 0]]. Every prefix of a path must itself be listed. Throws on malformed input.
TreeShape tree_from_choices(const std::vector<std::vector<int>>& choices, const std::string& source);
// Named built-in trees: "mc_sim_7b_63" (EAGLE-1's default static tree), "chain<K>".
TreeShape builtin_tree(const std::string& name);
// EAGLE-2 style dynamic tree approximated statically: the `total_tokens - 1` candidates of highest
// probability of lying on the accepted path, expanding at most `top_k` children per node and
// `depth` levels. Because a child never outranks its parent, best-first selection is optimal for
// the expected accepted length under `acc`.
TreeShape best_tree(const AcceptanceModel& acc, int total_tokens, int depth, int top_k);

// Expected tokens per step: 1 + Σ over nodes of P(node lies on the accepted path).
double tree_expected_tokens(const TreeShape& tree, const AcceptanceModel& acc);
// P(a step accepts at least d drafts) for d = 1..max_depth: the nodes of one depth are exclusive
// on the accepted path, so each is the sum of their probabilities.
std::vector<double> tree_depth_reach(const TreeShape& tree, const AcceptanceModel& acc);

}  // namespace specdec::sim
