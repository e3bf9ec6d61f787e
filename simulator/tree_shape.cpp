#include "simulator/tree_shape.hpp"

#include <algorithm>
#include <map>
#include <queue>

#include "reference/core/error.hpp"

namespace specdec::sim {

int TreeShape::max_depth() const { return depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end()); }

int TreeShape::nodes_at_depth(int d) const { return int(std::count(depth.begin(), depth.end(), d)); }

int TreeShape::num_leaves() const {
  std::vector<bool> has_child(parent.size(), false);
  for (int p : parent)
    if (p >= 0) has_child[p] = true;
  return int(std::count(has_child.begin(), has_child.end(), false));
}

TreeShape tree_from_choices(const std::vector<std::vector<int>>& choices, const std::string& source) {
  if (choices.empty()) throw Error(source + ": tree has no nodes; give at least [[0]]");
  std::vector<std::vector<int>> sorted = choices;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  std::map<std::vector<int>, int> index;
  TreeShape t;
  for (const auto& path : sorted) {
    auto str = [&] {
      std::string s = "[";
      for (size_t i = 0; i < path.size(); ++i) s += (i ? "," : "") + std::to_string(path[i]);
      return s + "]";
    };
    if (path.empty()) throw Error(source + ": empty path in tree choices (the root is implicit)");
    for (int r : path)
      if (r < 0) throw Error(source + ": negative rank in tree path " + str());
    if (index.count(path)) throw Error(source + ": tree path " + str() + " is listed twice");
    std::vector<int> prefix(path.begin(), path.end() - 1);
    int parent = -1;
    if (!prefix.empty()) {
      auto it = index.find(prefix);
      if (it == index.end()) throw Error(source + ": tree path " + str() + " lacks its parent path");
      parent = it->second;
    }
    index[path] = t.num_nodes();
    t.parent.push_back(parent);
    t.rank.push_back(path.back());
    t.depth.push_back(int(path.size()));
  }
  return t;
}

TreeShape builtin_tree(const std::string& name) {
  if (name == "mc_sim_7b_63") {
    // SafeAILab/EAGLE v1 eagle/model/choices.py (25 nodes plus the root, depth 5, ranks < 4).
    return tree_from_choices({{0}, {1}, {2}, {3}, {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0},
                              {0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 1, 0}, {0, 1, 1}, {0, 2, 0}, {0, 2, 1},
                              {1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 2}, {0, 0, 0, 0, 0},
                              {0, 0, 0, 0, 1}},
                             "mc_sim_7b_63");
  }
  if (name.rfind("chain", 0) == 0 && name.size() > 5) {
    int k = 0;
    try {
      k = std::stoi(name.substr(5));
    } catch (...) {
      k = 0;
    }
    if (k < 1) throw Error("tree '" + name + "': chain length must be >= 1");
    std::vector<std::vector<int>> c;
    for (int i = 1; i <= k; ++i) c.push_back(std::vector<int>(i, 0));
    return tree_from_choices(c, name);
  }
  throw Error("unknown built-in tree '" + name + "'; expected mc_sim_7b_63 or chain<K>");
}

namespace {

// P(node on accepted path) for each node, parents before children.
std::vector<double> node_probabilities(const TreeShape& t, const AcceptanceModel& acc) {
  std::vector<double> prob(t.num_nodes());
  for (int i = 0; i < t.num_nodes(); ++i) {
    const double parent = t.parent[i] < 0 ? 1.0 : prob[t.parent[i]];
    // Accepted as rank r: higher-ranked siblings (ranks < r that exist) rejected, then accepted.
    double p = acc.conditional(t.depth[i], t.rank[i]);
    for (int j = 0; j < t.num_nodes(); ++j)
      if (t.parent[j] == t.parent[i] && t.rank[j] < t.rank[i]) p *= 1.0 - acc.conditional(t.depth[j], t.rank[j]);
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
  for (int i = 0; i < tree.num_nodes(); ++i) reach[tree.depth[i] - 1] += prob[i];
  return reach;
}

TreeShape best_tree(const AcceptanceModel& acc, int total_tokens, int depth, int top_k) {
  if (total_tokens < 2) throw Error("tree node budget total_tokens must be >= 2 (root plus one draft)");
  if (depth < 1 || top_k < 1) throw Error("tree depth and top_k must be >= 1");
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
  while (t.num_nodes() < total_tokens - 1 && !frontier.empty()) {
    const Cand c = frontier.top();
    frontier.pop();
    const int id = t.num_nodes();
    t.parent.push_back(c.parent);
    t.rank.push_back(c.rank);
    t.depth.push_back(c.depth);
    // Next sibling and first child become candidates.
    push_child(c.parent, c.rank + 1, c.depth, c.parent_prob, c.rejected_before * (1.0 - acc.conditional(c.depth, c.rank)));
    push_child(id, 0, c.depth + 1, c.prob, 1.0);
  }
  return t;
}

}  // namespace specdec::sim
