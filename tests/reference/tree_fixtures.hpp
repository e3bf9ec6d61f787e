#pragma once
// A small draft tree under a cached prefix, and the check that a tree forward equals the chain
// forward along each root-to-leaf path (logits and the compacted cache), for any backend.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "reference/model/attention_mask.hpp"
#include "reference/model/language_model.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec::testing {

// node: parent: 0: −1, 1: −1, 2: −1, 3: 0, 4: 0, 5: 1, 6: 3, so the root-to-leaf paths are
// 0-3-6, 0-4, 1-5 and 2.
inline const std::vector<int> kTreeParents = {-1, -1, -1, 0, 0, 1, 3};
inline const std::vector<int> kTreeLeaves = {2, 4, 5, 6};

// The nodes from a root down to `node`.
inline std::vector<int> tree_path_to(int node) {
  std::vector<int> path;
  for (int n = node; n >= 0; n = kTreeParents[static_cast<std::size_t>(n)]) path.insert(path.begin(), n);
  return path;
}

// The forward of `nodes` (one token per node of kTreeParents) as a tree under `prefix_len` cached
// tokens: each node at the position after its parent's.
inline ForwardRequest tree_request(const std::vector<int32_t>& nodes, int prefix_len) {
  ForwardRequest tree = ForwardRequest::chain(nodes);
  tree.mask = AttentionMask::tree(prefix_len, kTreeParents);
  for (int n = 0; n < static_cast<int>(kTreeParents.size()); ++n)
    tree.positions.push_back(prefix_len + static_cast<int32_t>(tree_path_to(n).size()) - 1);
  return tree;
}

// Forwards `prefix`, then the tree of `nodes` (one token per node of kTreeParents) under it, and
// expects for every leaf: the tree's logits on the path equal those of a chain forward of prefix +
// path, and the tree cache compacted to the path equals the chain's cache (`same_cache`: bitwise
// equality of two caches of `model`'s kind). Returns the tree's logits: (nodes, V).
inline Matrix expect_tree_equals_chains(const LanguageModel& model, const std::vector<int32_t>& prefix,
                                        const std::vector<int32_t>& nodes, const std::string& name,
                                        const std::function<bool(const KVCache&, const KVCache&)>& same_cache) {
  const int C = static_cast<int>(prefix.size());
  const ForwardRequest tree = tree_request(nodes, C);
  auto tree_cache = model.new_cache(32);
  model.forward(*tree_cache, ForwardRequest::chain(prefix));
  const Matrix tree_logits = model.forward(*tree_cache, tree).logits;

  for (int leaf : kTreeLeaves) {
    const std::vector<int> path = tree_path_to(leaf);
    std::vector<int32_t> chain_tokens = prefix;
    for (int n : path) chain_tokens.push_back(nodes[static_cast<std::size_t>(n)]);
    auto chain_cache = model.new_cache(32);
    const Matrix chain_logits = model.forward(*chain_cache, ForwardRequest::chain(chain_tokens)).logits;
    for (std::size_t i = 0; i < path.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(tree_logits.middleRows(path[i], 1), chain_logits.middleRows(C + static_cast<int>(i), 1)))
          << name << ": leaf " << leaf << ", path node " << path[i];
    }
    // Compacting the tree cache to this path gives the chain's cache, bitwise.
    auto compact = model.new_cache(32);
    model.forward(*compact, ForwardRequest::chain(prefix));
    model.forward(*compact, tree);
    std::vector<int> slots;
    for (int n : path) slots.push_back(C + n);
    compact->gather(C, slots);
    EXPECT_TRUE(same_cache(*compact, *chain_cache)) << name << ": compacted cache for leaf " << leaf;
  }
  return tree_logits;
}

}  // namespace specdec::testing
