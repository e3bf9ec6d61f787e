#pragma once
// Draft trees: built-in and EAGLE-2 style shapes (which candidates are drafted) and the expected
// tokens a tree step emits under an acceptance model. The root (the last accepted token) is not
// stored.
#include <string>
#include <vector>

#include "reference/drafting/tree_choices.hpp"
#include "simulator/acceptance.hpp"

namespace specdec::sim {

// The shape is the reference's specdec::TreeShape (reference/drafting/tree_choices.hpp); a choices
// list such as [[0], [1], [0, 0]] is checked and laid out by make_tree_shape.

// Named built-in trees: "mc_sim_7b_63" (EAGLE-1's default static tree, 25 nodes),
// "medusa_mc_sim_7b_63" (Medusa's default static tree of the same name in its own code, 63 nodes),
// "chain<K>".
TreeShape builtin_tree(const std::string& name);
// EAGLE-2 style dynamic tree approximated statically: the `total_tokens - 1` candidates of highest
// probability of lying on the accepted path, expanding at most `top_k` children per node and
// `depth` levels. Because a child never outranks its parent, best-first selection is optimal for
// the expected accepted length under `acc`. The nodes come in the order they were chosen: parents
// before children, but not make_tree_shape's order.
TreeShape best_tree(const AcceptanceModel& acc, int total_tokens, int depth, int top_k);

// Expected tokens per step: 1 + Σ over nodes of P(node lies on the accepted path).
double tree_expected_tokens(const TreeShape& tree, const AcceptanceModel& acc);
// P(a step accepts at least d drafts) for d = 1..max_depth: the nodes of one depth are exclusive
// on the accepted path, so each is the sum of their probabilities.
std::vector<double> tree_depth_reach(const TreeShape& tree, const AcceptanceModel& acc);

}  // namespace specdec::sim
