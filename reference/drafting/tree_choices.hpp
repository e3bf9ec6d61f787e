#pragma once
// Static draft trees in EAGLE's and Medusa's notation: a list of root-to-node paths of child
// ranks. [[0], [1], [0, 0]] = the two best children of the root and the best child of the first
// one. Which distribution a rank refers to is the drafter's business (EAGLE: the drafter's
// distribution at the parent; P-EAGLE/Medusa: the parallel position at that depth).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace specdec {

using TreeChoices = std::vector<std::vector<int>>;

// Draft nodes of a static tree, the root (the last accepted token) not stored. make_tree_shape lays
// a validated choices list out sorted by depth and then lexicographically (EAGLE's order); other
// builders (the simulator's best_tree) may order otherwise, but every parent precedes its children.
struct TreeShape {
  TreeChoices paths;         // (N) the sorted paths
  std::vector<int> parents;  // (N) parent node, −1 = the root
  std::vector<int> ranks;    // (N) rank of the node among its parent's candidates (last path element)
  std::vector<int> depths;   // (N) 1 for children of the root

  int size() const { return static_cast<int>(paths.size()); }
  int max_depth() const;
  int max_rank() const;
  // Whether some node has `node` as parent (node −1 = the root).
  bool has_children(int node) const;
  int nodes_at_depth(int d) const;
  int num_leaves() const;  // nodes without children: the root-to-leaf paths
  // The nodes no deeper than `depth`: a prefix of a depth-sorted shape (make_tree_shape's order).
  TreeShape truncated(int depth) const;
};

// EAGLE's default static tree (SafeAILab EAGLE `choices.py`): 25 draft nodes plus the root,
// depth 5, ranks < 4.
const TreeChoices& mc_sim_7b_63();

// Checks the list and lays it out. Throws specdec::Error naming `source` and the offending path
// when the list is empty, a path is empty, a rank is negative, a path is listed twice, or a
// path's parent path (the path without its last rank) is missing.
TreeShape make_tree_shape(const TreeChoices& choices, const std::string& source);

// A JSON list of lists of non-negative integers, e.g. [[0], [1], [0, 0]]; validated as above.
TreeChoices parse_tree_choices(const nlohmann::json& j, const std::string& source);
// Reads such a JSON file; errors name the file.
TreeChoices load_tree_choices(const std::filesystem::path& file);
// "mc_sim_7b_63" gives the built-in tree; text starting with '[' is parsed as inline JSON;
// anything else is read as a JSON file path.
TreeChoices tree_choices_from_spec(const std::string& spec);
nlohmann::json tree_choices_to_json(const TreeChoices& choices);

}  // namespace specdec
