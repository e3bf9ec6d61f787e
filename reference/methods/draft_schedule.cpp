#include "reference/methods/draft_schedule.hpp"

#include <algorithm>

#include "reference/drafting/tree_choices.hpp"
#include "reference/methods/registry.hpp"

namespace specdec {

int StepShape::max_depth() const {
  switch (kind) {
    case Kind::chain: return k;
    case Kind::static_tree: return static_cast<int>(nodes_per_depth.size());
    case Kind::dynamic_tree: return depth + 1;
  }
  return k;
}

DraftSchedule no_drafter_forwards(const StepShape&, const CatchUp&) { return {}; }

StepShape step_shape(const MethodSpec& spec) {
  check_method_spec(spec);
  StepShape s;
  if (spec.tree == "chain") {
    s.k = spec.k;
  } else if (spec.tree == "dynamic") {
    s.kind = StepShape::Kind::dynamic_tree;
    s.depth = spec.depth;
    s.top_k = spec.tree_top_k;
  } else {
    s.kind = StepShape::Kind::static_tree;
    const TreeShape tree = make_tree_shape(tree_choices_from_spec(spec.tree), "--tree");
    s.nodes_per_depth.assign(static_cast<size_t>(tree.max_depth()), 0);
    s.expanded_per_depth.assign(static_cast<size_t>(tree.max_depth()), 0);
    for (int n = 0; n < tree.size(); ++n) {
      const size_t d = static_cast<size_t>(tree.depths[static_cast<size_t>(n)] - 1);
      ++s.nodes_per_depth[d];
      if (tree.has_children(n)) ++s.expanded_per_depth[d];
    }
  }
  return s;
}

}  // namespace specdec
