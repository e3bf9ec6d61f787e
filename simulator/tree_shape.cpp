#include "simulator/tree_shape.hpp"

#include <algorithm>
#include <queue>

#include "reference/core/error.hpp"
#include "reference/drafting/draft_limits.hpp"

namespace specdec::sim {

TreeShape builtin_tree(const std::string& name) {
  if (name == "mc_sim_7b_63") {
    // SafeAILab/EAGLE v1 eagle/model/choices.py (25 nodes plus the root, depth 5, ranks < 4); the
    // list is already in make_tree_shape's order.
    return make_tree_shape(mc_sim_7b_63(), "mc_sim_7b_63");
  }
  if (name == "medusa_mc_sim_7b_63") {
    // FasterDecoding/Medusa medusa/model/medusa_choices.py `mc_sim_7b_63` (the Medusa code's default
    // tree; not EAGLE's tree of the same name): 63 nodes plus the root, depth 4, ranks < 10. A rank
    // at depth d is the rank-th candidate of Medusa head d − 1.
    static const std::vector<std::vector<int>> choices = {
        {0}, {0, 0}, {1}, {0, 1}, {2}, {0, 0, 0}, {1, 0}, {0, 2}, {3}, {0, 3}, {4}, {0, 4}, {2, 0}, {0, 5}, {0, 0, 1},
        {5}, {0, 6}, {6}, {0, 7}, {0, 1, 0}, {1, 1}, {7}, {0, 8}, {0, 0, 2}, {3, 0}, {0, 9}, {8}, {9}, {1, 0, 0},
        {0, 2, 0}, {1, 2}, {0, 0, 3}, {4, 0}, {2, 1}, {0, 0, 4}, {0, 0, 5}, {0, 0, 0, 0}, {0, 1, 1}, {0, 0, 6},
        {0, 3, 0}, {5, 0}, {1, 3}, {0, 0, 7}, {0, 0, 8}, {0, 0, 9}, {6, 0}, {0, 4, 0}, {1, 4}, {7, 0}, {0, 1, 2},
        {2, 0, 0}, {3, 1}, {2, 2}, {8, 0}, {0, 5, 0}, {1, 5}, {1, 0, 1}, {0, 2, 1}, {9, 0}, {0, 6, 0},
        {0, 0, 0, 1}, {1, 6}, {0, 7, 0}};
    return make_tree_shape(choices, "medusa_mc_sim_7b_63");
  }
  if (name.rfind("chain", 0) == 0 && name.size() > 5) {
    int k = 0;
    try {
      k = std::stoi(name.substr(5));
    } catch (...) {
      k = 0;
    }
    if (k < 1) throw Error("tree '" + name + "': chain length must be >= 1");
    check_draft_limit("tree '" + name + "'", "the chain's length", k, kMaxDraftDepth);
    std::vector<std::vector<int>> c;
    for (int i = 1; i <= k; ++i) c.push_back(std::vector<int>(i, 0));
    return make_tree_shape(c, name);
  }
  throw Error("unknown built-in tree '" + name + "'; expected mc_sim_7b_63 (EAGLE's), medusa_mc_sim_7b_63 (Medusa's) or chain<K>");
}

namespace {

// P(node on accepted path) for each node, parents before children.
std::vector<double> node_probabilities(const TreeShape& t, const AcceptanceModel& acc) {
  std::vector<double> prob(size_t(t.size()));
  for (int i = 0; i < t.size(); ++i) {
    const double parent = t.parents[i] < 0 ? 1.0 : prob[t.parents[i]];
    // Accepted as rank r: higher-ranked siblings (ranks < r that exist) rejected, then accepted.
    double p = acc.conditional(t.depths[i], t.ranks[i]);
    for (int j = 0; j < t.size(); ++j)
      if (t.parents[j] == t.parents[i] && t.ranks[j] < t.ranks[i]) p *= 1.0 - acc.conditional(t.depths[j], t.ranks[j]);
    prob[i] = parent * p;
  }
  return prob;
}

}  // namespace

double tree_expected_tokens(const TreeShape& tree, const AcceptanceModel& acc) {
  if (tree.max_depth() > acc.max_k())
    throw Error("tree depth " + std::to_string(tree.max_depth()) + " exceeds what acceptance model '" +
                acc.describe() + "' covers (" + std::to_string(acc.max_k()) + ")");
  double al = 1.0;
  for (double p : node_probabilities(tree, acc)) al += p;
  return al;
}

std::vector<double> tree_depth_reach(const TreeShape& tree, const AcceptanceModel& acc) {
  tree_expected_tokens(tree, acc);  // checks the depth against the model
  std::vector<double> reach(tree.max_depth(), 0.0);
  const std::vector<double> prob = node_probabilities(tree, acc);
  for (int i = 0; i < tree.size(); ++i) reach[tree.depths[i] - 1] += prob[i];
  return reach;
}

TreeShape best_tree(const AcceptanceModel& acc, int total_tokens, int depth, int top_k) {
  if (total_tokens < 2) throw Error("tree node budget total_tokens must be >= 2 (root plus one draft)");
  if (depth < 1 || top_k < 1) throw Error("tree depth and top_k must be >= 1");
  // The decoder's bounds on an EAGLE-2 tree (reference/drafting/draft_limits.hpp).
  check_draft_limit("dynamic tree", "total_tokens - 1 (draft nodes per step)", total_tokens - 1LL, kMaxDraftNodes);
  check_draft_limit("dynamic tree", "depth", depth, kMaxDraftDepth);
  check_draft_limit("dynamic tree", "top_k", top_k, kMaxDraftTopK);
  if (depth > acc.max_k())
    throw Error("tree depth " + std::to_string(depth) + " exceeds what acceptance model '" + acc.describe() +
                "' covers (" + std::to_string(acc.max_k()) + ")");
  struct Cand {
    double prob;
    int parent, rank, depth;
    double parent_prob, rejected_before;  // P(parent), Π(1 − p) over higher ranks
    bool operator<(const Cand& o) const { return prob < o.prob; }
  };
  TreeShape t;
  std::priority_queue<Cand> frontier;
  auto push_child = [&](int parent, int rank, int d, double parent_prob, double rejected_before) {
    if (d > depth || rank >= top_k) return;
    const double p = acc.conditional(d, rank);
    frontier.push({parent_prob * rejected_before * p, parent, rank, d, parent_prob, rejected_before});
  };
  push_child(-1, 0, 1, 1.0, 1.0);
  while (t.size() < total_tokens - 1 && !frontier.empty()) {
    const Cand c = frontier.top();
    frontier.pop();
    const int id = t.size();
    std::vector<int> path = c.parent < 0 ? std::vector<int>{} : t.paths[size_t(c.parent)];
    path.push_back(c.rank);
    t.paths.push_back(std::move(path));
    t.parents.push_back(c.parent);
    t.ranks.push_back(c.rank);
    t.depths.push_back(c.depth);
    // Next sibling and first child become candidates.
    push_child(c.parent, c.rank + 1, c.depth, c.parent_prob, c.rejected_before * (1.0 - acc.conditional(c.depth, c.rank)));
    push_child(id, 0, c.depth + 1, c.prob, 1.0);
  }
  return t;
}

}  // namespace specdec::sim
