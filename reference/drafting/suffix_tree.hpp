#pragma once
// Suffix decoding's index (Oliaro et al., "SuffixDecoding", arXiv 2411.04975; Arctic Inference's
// suffix_decoding/suffix_tree.cc, which vLLM's `suffix` method runs):
//
//   suffix     every suffix of every stored sequence, cut at `max_depth` tokens: the strings
//              seq[i, min(i + D, len)) for each start i
//   count(x)   how many of them begin with x (a trie whose node for x holds count(x))
//   match      the last m tokens of the context, followed from the root (m = 1, 2, ... while it
//              is found, m < context length)
//   budget     ⌊m · spec_factor + spec_offset⌋, at most max_spec_tokens
//   path       from the match, the child with the largest count, while the path probability —
//              the product of count(child) / count(node) along it — stays ≥ min_token_prob
//   tree       best-first: the draft node of highest path probability next, its children queued
//   score      the sum of the drafts' path probabilities; the best over m wins, the longer m on ties
//
// Arctic Inference compresses single-child runs into one node and multiplies the probability only
// where it branches; this trie keeps a node per token and multiplies only where a child's count is
// below its parent's — the same places, in the same float operations, so probabilities and scores
// are bit-for-bit the ones it computes. Where its hash map or heap leaves order unspecified, this
// one is fixed: equal counts go to the smaller token id, equal probabilities pop in the order queued.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace specdec {

// Where a drafted token is stored: tree `tree` of those speculated over, sequence `seq` at `index`
// (its last insertion; seq −1 when that sequence has since been removed).
struct SuffixRef {
  int tree = 0;
  int64_t seq = -1, index = -1;
};

// A speculation: a draft tree in node order with each node's path probability.
struct SuffixDraft {
  std::vector<int32_t> tokens;   // (N)
  std::vector<int32_t> parents;  // (N) −1 = after the context
  std::vector<float> probs;      // (N) path probability
  float score = 0.0f;            // sum of probs
  int match_length = 0;          // m of the winning match
  std::vector<SuffixRef> refs;  // (N)
};

struct SuffixSpeculation {
  int max_spec_tokens = 0;
  float spec_factor = 1.0f;
  float spec_offset = 0.0f;
  float min_token_prob = 0.1f;
  bool tree = false;  // best-first tree; false: the greedy path
};

class SuffixTree {
 public:
  explicit SuffixTree(int max_depth);

  int max_depth() const { return max_depth_; }
  // Appends `token` to sequence `seq` (created empty on first use).
  void append(int64_t seq, int32_t token);
  void extend(int64_t seq, std::span<const int32_t> tokens);
  // Removes every suffix of sequence `seq` (a no-op for one it does not hold).
  void remove(int64_t seq);
  bool holds(int64_t seq) const { return seqs_.count(seq) != 0; }
  std::size_t nodes() const { return nodes_; }

  struct Node {
    int64_t count = 0;
    int32_t token = 0;
    int64_t ref_seq = -1, ref_index = -1;  // the last insertion of this node's token
    std::map<int32_t, std::unique_ptr<Node>> children;
  };
  const Node& root() const { return *root_; }

 private:
  int max_depth_;
  std::unique_ptr<Node> root_;
  std::size_t nodes_ = 1;
  std::unordered_map<int64_t, std::vector<int32_t>> seqs_;
  std::unordered_map<int64_t, std::deque<Node*>> active_;  // per sequence: the nodes its last < D suffixes end at
};

// The best speculation after `context` over the union of `trees` (counts summed, as if one tree
// held all their sequences): how Arctic Inference reads one suffix tree, and how specdec reads
// the run's responses beside a request's own. Trees must share max_depth.
SuffixDraft speculate(const std::vector<const SuffixTree*>& trees, std::span<const int32_t> context,
                      const SuffixSpeculation& how);

}  // namespace specdec
