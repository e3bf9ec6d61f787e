#include "reference/drafting/suffix_tree.hpp"

#include <algorithm>
#include <queue>

#include "reference/core/error.hpp"

namespace specdec {

SuffixTree::SuffixTree(int max_depth) : max_depth_(max_depth), root_(std::make_unique<Node>()) {
  if (max_depth < 1) throw Error("suffix tree: max_depth must be >= 1 (got " + std::to_string(max_depth) + ")");
}

void SuffixTree::append(int64_t seq, int32_t token) {
  std::vector<int32_t>& s = seqs_[seq];
  std::deque<Node*>& active = active_[seq];
  // A suffix starts at the new token; the oldest one stops growing once it holds D tokens.
  active.push_back(root_.get());
  ++root_->count;
  if (active.size() > static_cast<std::size_t>(max_depth_)) active.pop_front();
  const auto index = static_cast<int64_t>(s.size());
  s.push_back(token);
  for (Node*& node : active) {
    std::unique_ptr<Node>& child = node->children[token];
    if (!child) {
      child = std::make_unique<Node>();
      child->token = token;
      ++nodes_;
    }
    ++child->count;
    child->ref_seq = seq;
    child->ref_index = index;
    node = child.get();
  }
}

void SuffixTree::extend(int64_t seq, std::span<const int32_t> tokens) {
  for (int32_t t : tokens) append(seq, t);
}

void SuffixTree::remove(int64_t seq) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const std::vector<int32_t>& s = it->second;
  for (std::size_t start = 0; start < s.size(); ++start) {
    --root_->count;
    Node* node = root_.get();
    const std::size_t end = std::min(s.size(), start + static_cast<std::size_t>(max_depth_));
    for (std::size_t i = start; i < end; ++i) {
      const auto c = node->children.find(s[i]);
      Node* child = c->second.get();
      if (--child->count == 0) {  // nothing else passes here: drop the subtree
        std::size_t dropped = 0;
        std::vector<Node*> stack = {child};
        while (!stack.empty()) {
          Node* n = stack.back();
          stack.pop_back();
          ++dropped;
          for (auto& [t, ch] : n->children) stack.push_back(ch.get());
        }
        nodes_ -= dropped;
        node->children.erase(c);
        break;
      }
      if (child->ref_seq == seq) child->ref_seq = child->ref_index = -1;  // its source is gone
      node = child;
    }
  }
  seqs_.erase(it);
  active_.erase(seq);
}

namespace {

// One position in the union of the trees: the node of each tree there (null where absent).
struct At {
  std::vector<const SuffixTree::Node*> nodes;
  int64_t count() const {
    int64_t c = 0;
    for (const auto* n : nodes)
      if (n) c += n->count;
    return c;
  }
  SuffixRef ref() const {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i] && nodes[i]->ref_seq >= 0) return {static_cast<int>(i), nodes[i]->ref_seq, nodes[i]->ref_index};
    return {};
  }
  At child(int32_t token) const {
    At a;
    bool any = false;
    for (const auto* n : nodes) {
      const SuffixTree::Node* c = nullptr;
      if (n) {
        const auto it = n->children.find(token);
        if (it != n->children.end()) c = it->second.get();
      }
      any = any || c;
      a.nodes.push_back(c);
    }
    if (!any) a.nodes.clear();
    return a;
  }
  bool empty() const { return nodes.empty(); }
  // The child tokens, ascending.
  std::vector<int32_t> child_tokens() const {
    std::vector<int32_t> t;
    for (const auto* n : nodes)
      if (n)
        for (const auto& [token, c] : n->children) t.push_back(token);
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
    return t;
  }
};

At match(const std::vector<const SuffixTree*>& trees, std::span<const int32_t> pattern) {
  At at;
  for (const SuffixTree* t : trees) at.nodes.push_back(&t->root());
  for (int32_t token : pattern) {
    at = at.child(token);
    if (at.empty()) return at;
  }
  return at;
}

void push(SuffixDraft& d, int32_t token, int32_t parent, float prob, const At& at) {
  d.tokens.push_back(token);
  d.parents.push_back(parent);
  d.probs.push_back(prob);
  d.refs.push_back(at.ref());
  d.score += prob;
}

SuffixDraft speculate_path(At node, int budget, float min_prob) {
  SuffixDraft d;
  float prob = 1.0f;
  while (static_cast<int>(d.tokens.size()) < budget && prob >= min_prob) {
    const int64_t here = node.count();
    int32_t best = 0;
    int64_t best_count = 0;
    for (int32_t t : node.child_tokens()) {
      const int64_t c = node.child(t).count();
      if (c > best_count) best = t, best_count = c;
    }
    if (best_count == 0) break;
    // Arctic Inference multiplies where the tree branches (a child below its parent's count).
    if (best_count < here) prob *= static_cast<float>(best_count) / static_cast<float>(here);
    node = node.child(best);
    if (!(static_cast<int>(d.tokens.size()) < budget && prob >= min_prob)) break;
    push(d, best, static_cast<int32_t>(d.tokens.size()) - 1, prob, node);
  }
  return d;
}

SuffixDraft speculate_tree(const At& start, int budget, float min_prob) {
  struct Item {
    float prob;
    uint64_t order;  // equal probabilities pop in the order queued
    At at;
    int32_t token;
    int32_t parent;
  };
  const auto later = [](const Item& a, const Item& b) { return a.prob != b.prob ? a.prob < b.prob : a.order > b.order; };
  std::priority_queue<Item, std::vector<Item>, decltype(later)> queue(later);
  uint64_t order = 0;
  const auto expand = [&](const At& at, float prob, int32_t parent) {
    const int64_t here = at.count();
    for (int32_t t : at.child_tokens()) {
      At c = at.child(t);
      const int64_t n = c.count();
      float p = prob;
      if (n < here) {
        p = prob * static_cast<float>(n) / static_cast<float>(here);
        if (!(p >= min_prob)) continue;
      }
      queue.push({p, order++, std::move(c), t, parent});
    }
  };
  SuffixDraft d;
  expand(start, 1.0f, -1);
  while (static_cast<int>(d.tokens.size()) < budget && !queue.empty()) {
    Item item = queue.top();
    queue.pop();
    push(d, item.token, item.parent, item.prob, item.at);
    expand(item.at, item.prob, static_cast<int32_t>(d.tokens.size()) - 1);
  }
  return d;
}

}  // namespace

SuffixDraft speculate(const std::vector<const SuffixTree*>& trees, std::span<const int32_t> context,
                      const SuffixSpeculation& how) {
  SuffixDraft best;
  if (trees.empty()) return best;
  for (std::size_t m = 1; m < context.size(); ++m) {
    const At at = match(trees, context.subspan(context.size() - m, m));
    if (at.empty()) break;
    const int budget = std::max(0, std::min(how.max_spec_tokens, static_cast<int>(static_cast<float>(m) * how.spec_factor +
                                                                                   how.spec_offset + 1e-6)));
    SuffixDraft d = how.tree ? speculate_tree(at, budget, how.min_token_prob) : speculate_path(at, budget, how.min_token_prob);
    if (d.score >= best.score) {
      best = std::move(d);
      best.match_length = static_cast<int>(m);
    }
  }
  return best;
}

}  // namespace specdec
