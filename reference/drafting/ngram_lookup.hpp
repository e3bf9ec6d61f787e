#pragma once
// Prompt lookup: drafts copied from the sequence itself, where its last few tokens occurred
// before. No model is asked; the drafts are a function of the token history alone, so they are
// the same on every backend. Each engine's rule is reproduced as its code has it (docs/drafters.md):
//
//   history   the prompt and the tokens emitted so far, the last one pending (L = its length)
//   n-gram    the last n tokens of the history, history[L − n, L)
//   occurrence an earlier position s with history[s, s + n) equal to the n-gram and s + n ≤ L − 1,
//             so at least one token follows it (the n-gram itself, s = L − n, is not one)
//   drafts    the tokens that followed the occurrence, history[s + n, s + n + K) cut at L
#include <cstdint>
#include <span>
#include <vector>

#include "reference/acceptance/draft_tree.hpp"
#include "reference/drafting/proposer.hpp"

namespace specdec {

// One chain of drafts copied from history[start, start + tokens.size()).
struct NgramMatch {
  std::vector<int32_t> tokens;  // (≤ K) empty: no match
  int64_t start = -1;           // where the copied tokens begin in the history
  int length = 0;               // n: the length of the matched n-gram (occurrence at start − n)
};

// vLLM (v1 NgramProposer): the longest n in [n_min, n_max] whose n-gram has an occurrence, its
// earliest occurrence; at most K drafts and at most `max_model_len` − L. A history shorter than
// n_min drafts nothing.
NgramMatch vllm_ngram_lookup(std::span<const int32_t> history, int n_min, int n_max, int k, int max_model_len);

// Hugging Face transformers (PromptLookupCandidateGenerator): n from min(n_max, L − 1) down to 1,
// the first occurrence (in position order) of the first n that has one; at most K drafts, cut
// before the first of `eos` (the generation's EOS ids: a match whose continuation starts with one
// drafts nothing; the search does not go on). Nothing when `max_length` (the generation's
// max_length; 0: none) is L + 1: the one token left is the target's own.
NgramMatch hf_prompt_lookup(std::span<const int32_t> history, int n_max, int k, int max_length,
                            std::span<const int32_t> eos = {});

// The tree form, in the manner of SGLang's n-gram trie (not its exact rule, which also pools
// earlier requests): the longest n in [n_min, n_max] whose n-gram has occurrences; the
// continuations of all of them (each up to `depth` tokens, cut at L) merged into a trie; at each
// node the `breadth` children followed by most occurrences (ties: the earlier occurrence) are
// kept; nodes are taken breadth-first until `max_nodes`. Sources: each node's earliest occurrence.
struct NgramTree {
  DraftTree tree;
  std::vector<DraftSource> sources;  // (N) node order
};
NgramTree ngram_tree_lookup(std::span<const int32_t> history, int n_min, int n_max, int depth, int breadth, int max_nodes);

}  // namespace specdec
