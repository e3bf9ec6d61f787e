#include "reference/drafting/ngram_lookup.hpp"

#include <algorithm>
#include <deque>
#include <map>

namespace specdec {

namespace {

using History = std::span<const int32_t>;

// Whether history[s, s + n) equals the n-gram history[L − n, L).
bool occurs_at(History h, int64_t s, int n) {
  const int64_t L = static_cast<int64_t>(h.size());
  return std::equal(h.begin() + s, h.begin() + s + n, h.begin() + (L - n));
}

// Every occurrence of the n-gram of length n, in position order (s + n ≤ L − 1).
std::vector<int64_t> occurrences(History h, int n) {
  std::vector<int64_t> found;
  const int64_t L = static_cast<int64_t>(h.size());
  for (int64_t s = 0; s + n <= L - 1; ++s)
    if (occurs_at(h, s, n)) found.push_back(s);
  return found;
}

// The earliest occurrence of the n-gram of length n, −1 if none.
int64_t first_occurrence(History h, int n) {
  const int64_t L = static_cast<int64_t>(h.size());
  for (int64_t s = 0; s + n <= L - 1; ++s)
    if (occurs_at(h, s, n)) return s;
  return -1;
}

NgramMatch copy_after(History h, int64_t s, int n, int64_t k) {
  NgramMatch m;
  m.length = n;
  m.start = s + n;
  const int64_t end = std::min<int64_t>(m.start + k, static_cast<int64_t>(h.size()));
  m.tokens.assign(h.begin() + m.start, h.begin() + end);
  return m;
}

}  // namespace

NgramMatch vllm_ngram_lookup(History h, int n_min, int n_max, int k, int max_model_len) {
  const int64_t L = static_cast<int64_t>(h.size());
  if (L < n_min) return {};
  const int64_t budget = std::min<int64_t>(k, static_cast<int64_t>(max_model_len) - L);
  if (budget <= 0) return {};
  for (int n = static_cast<int>(std::min<int64_t>(n_max, L - 1)); n >= n_min; --n) {
    const int64_t s = first_occurrence(h, n);
    if (s >= 0) return copy_after(h, s, n, budget);
  }
  return {};
}

NgramMatch hf_prompt_lookup(History h, int n_max, int k, int max_length, std::span<const int32_t> eos) {
  const int64_t L = static_cast<int64_t>(h.size());
  if (max_length > 0 && max_length == L + 1) return {};
  for (int n = static_cast<int>(std::min<int64_t>(n_max, L - 1)); n >= 1; --n) {
    const int64_t s = first_occurrence(h, n);
    if (s < 0) continue;
    NgramMatch m = copy_after(h, s, n, k);
    const auto stop = std::find_first_of(m.tokens.begin(), m.tokens.end(), eos.begin(), eos.end());
    m.tokens.erase(stop, m.tokens.end());
    if (m.tokens.empty()) return {};
    return m;
  }
  return {};
}

NgramTree ngram_tree_lookup(History h, int n_min, int n_max, int depth, int breadth, int max_nodes) {
  const int64_t L = static_cast<int64_t>(h.size());
  NgramTree out;
  std::vector<int64_t> starts;  // where each occurrence's continuation begins
  int n = static_cast<int>(std::min<int64_t>(n_max, L - 1));
  for (; n >= n_min && starts.empty(); --n)
    for (int64_t s : occurrences(h, n)) starts.push_back(s + n);
  const int matched = n + 1;
  if (starts.empty()) return out;

  // The trie of continuations: per node, its children by token with the occurrences through them.
  struct Node {
    int32_t token = 0;
    int64_t count = 0;
    int64_t first = 0;  // the earliest occurrence's position of this token
    std::map<int32_t, int> children;
  };
  std::vector<Node> trie(1);  // trie[0]: the root (the pending token)
  for (int64_t start : starts) {
    int at = 0;
    for (int64_t p = start; p < std::min<int64_t>(start + depth, L); ++p) {
      const int32_t t = h[static_cast<std::size_t>(p)];
      auto it = trie[static_cast<std::size_t>(at)].children.find(t);
      int child;
      if (it == trie[static_cast<std::size_t>(at)].children.end()) {
        child = static_cast<int>(trie.size());
        trie[static_cast<std::size_t>(at)].children.emplace(t, child);
        trie.push_back({t, 0, p, {}});
      } else {
        child = it->second;
      }
      ++trie[static_cast<std::size_t>(child)].count;
      at = child;
    }
  }
  // Breadth-first, the `breadth` most followed children of each node, until max_nodes.
  std::deque<std::pair<int, int>> queue = {{0, -1}};  // (trie node, draft node)
  while (!queue.empty() && out.tree.size() < max_nodes) {
    const auto [at, parent] = queue.front();
    queue.pop_front();
    std::vector<int> kids;
    for (const auto& [token, child] : trie[static_cast<std::size_t>(at)].children) kids.push_back(child);
    std::stable_sort(kids.begin(), kids.end(), [&](int a, int b) {
      const Node& x = trie[static_cast<std::size_t>(a)];
      const Node& y = trie[static_cast<std::size_t>(b)];
      return x.count != y.count ? x.count > y.count : x.first < y.first;
    });
    if (static_cast<int>(kids.size()) > breadth) kids.resize(static_cast<std::size_t>(breadth));
    for (int child : kids) {
      if (out.tree.size() >= max_nodes) break;
      const Node& c = trie[static_cast<std::size_t>(child)];
      out.tree.tokens.push_back(c.token);
      out.tree.parents.push_back(parent);
      out.sources.push_back({DraftSource::Origin::context, c.first, matched, -1});
      queue.emplace_back(child, out.tree.size() - 1);
    }
  }
  return out;
}

}  // namespace specdec
