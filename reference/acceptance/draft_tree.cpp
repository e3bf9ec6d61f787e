#include "reference/acceptance/draft_tree.hpp"

#include <string>

#include "reference/core/error.hpp"

namespace specdec {

DraftTree DraftTree::chain(std::vector<int32_t> tokens) {
  DraftTree t;
  t.parents.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) t.parents[i] = static_cast<int32_t>(i) - 1;
  t.tokens = std::move(tokens);
  return t;
}

int DraftTree::depth(int node) const {
  int d = 0;
  for (int n = node; n >= 0; n = parents[n]) ++d;
  return d;
}

std::vector<int> DraftTree::children(int node) const {
  std::vector<int> c;
  for (int i = 0; i < size(); ++i)
    if (parents[i] == node) c.push_back(i);
  return c;
}

std::vector<int> DraftTree::path_to(int node) const {
  std::vector<int> path;
  for (int n = node; n >= 0; n = parents[n]) path.insert(path.begin(), n);
  return path;
}

bool DraftTree::is_chain() const {
  for (int i = 0; i < size(); ++i)
    if (parents[i] != i - 1) return false;
  return true;
}

void DraftTree::validate(int vocab_size) const {
  if (tokens.size() != parents.size()) {
    throw Error("draft tree: " + std::to_string(tokens.size()) + " tokens but " + std::to_string(parents.size()) + " parents");
  }
  for (int i = 0; i < size(); ++i) {
    if (parents[i] < -1 || parents[i] >= i) {
      throw Error("draft tree: node " + std::to_string(i) + " has parent " + std::to_string(parents[i]) +
                  "; expected −1 (the root) or an earlier node");
    }
    if (tokens[i] < 0 || tokens[i] >= vocab_size) {
      throw Error("draft tree: node " + std::to_string(i) + " has token " + std::to_string(tokens[i]) +
                  " outside the target vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
  }
}

}  // namespace specdec
