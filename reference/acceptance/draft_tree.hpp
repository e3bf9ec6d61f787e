#pragma once
// The drafted tokens of one speculative step: a chain is a tree in which every node's parent is
// the node before it. Node n's token would sit at depth(n) positions after the root, the last
// token already emitted.
#include <cstdint>
#include <vector>

namespace specdec {

struct DraftTree {
  std::vector<int32_t> tokens;   // (N) target-vocabulary id of each draft node
  std::vector<int32_t> parents;  // (N) parent node, −1 = the root; parents precede children

  static DraftTree chain(std::vector<int32_t> tokens);

  int size() const { return static_cast<int>(tokens.size()); }
  int depth(int node) const;                       // 1 for children of the root
  std::vector<int> children(int node) const;       // node −1 = the root; in node order
  std::vector<int> path_to(int node) const;        // root-to-node path (node excluded root)
  bool is_chain() const;
  // Throws specdec::Error if parents are out of order or tokens outside [0, vocab).
  void validate(int vocab_size) const;
};

}  // namespace specdec
