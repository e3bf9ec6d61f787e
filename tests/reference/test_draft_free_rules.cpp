// The draft-free drafting rules pinned on crafted histories (label cpu): vLLM's n-gram lookup,
// Hugging Face's prompt lookup and the n-gram tree (ngram_lookup.hpp), suffix decoding's index and
// speculation (suffix_tree.hpp) and its per-step proposer (suffix_proposer.hpp). Each expected
// draft is written out by hand from the engine's rule; tests/python/test_draft_free.py checks the
// same rules against independent Python implementations on randomized histories.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "reference/drafting/ngram_lookup.hpp"
#include "reference/drafting/suffix_proposer.hpp"
#include "reference/drafting/suffix_tree.hpp"

namespace specdec {
namespace {

using Tokens = std::vector<int32_t>;

// ---- vLLM n-gram ---------------------------------------------------------------------------------

void expect_match(const NgramMatch& m, const Tokens& tokens, int64_t start, int length) {
  EXPECT_EQ(m.tokens, tokens);
  EXPECT_EQ(m.start, start);
  EXPECT_EQ(m.length, length);
}

TEST(RuleVllmNgram, LongestMatchWinsOverAnEarlierShorterOne) {
  const Tokens h = {1, 2, 3, 9, 2, 3, 7, 1, 2, 3};
  expect_match(vllm_ngram_lookup(h, 1, 3, 4, 2048), {9, 2, 3, 7}, 3, 3);
  // n_max 2: [2,3] at its earliest occurrence (1), not the later one (4).
  expect_match(vllm_ngram_lookup(h, 1, 2, 4, 2048), {9, 2, 3, 7}, 3, 2);
}

TEST(RuleVllmNgram, EarliestOfEqualMatches) {
  expect_match(vllm_ngram_lookup(Tokens{5, 1, 6, 1, 7, 1}, 1, 1, 2, 2048), {6, 1}, 2, 1);
}

TEST(RuleVllmNgram, NoMatchAndShortHistories) {
  EXPECT_TRUE(vllm_ngram_lookup(Tokens{1, 2, 3, 4}, 1, 3, 4, 2048).tokens.empty());
  EXPECT_TRUE(vllm_ngram_lookup(Tokens{1, 1}, 3, 4, 4, 2048).tokens.empty());     // L < n_min
  EXPECT_TRUE(vllm_ngram_lookup(Tokens{1, 1, 1}, 3, 4, 4, 2048).tokens.empty());  // n <= L − 1 < n_min
  EXPECT_TRUE(vllm_ngram_lookup(Tokens{4}, 1, 1, 4, 2048).tokens.empty());
}

TEST(RuleVllmNgram, OverlappingOccurrences) {
  const Tokens h = {1, 1, 1, 1};
  expect_match(vllm_ngram_lookup(h, 1, 3, 4, 2048), {1}, 3, 3);
  expect_match(vllm_ngram_lookup(h, 1, 2, 4, 2048), {1, 1}, 2, 2);
  expect_match(vllm_ngram_lookup(h, 1, 1, 4, 2048), {1, 1, 1}, 1, 1);
}

TEST(RuleVllmNgram, KBeyondTheHistoryAndMaxModelLen) {
  const Tokens h = {1, 2, 3, 1};
  expect_match(vllm_ngram_lookup(h, 1, 2, 10, 2048), {2, 3, 1}, 1, 1);
  expect_match(vllm_ngram_lookup(h, 1, 2, 4, 6), {2, 3}, 1, 1);
  expect_match(vllm_ngram_lookup(h, 1, 2, 4, 5), {2}, 1, 1);
  EXPECT_TRUE(vllm_ngram_lookup(h, 1, 2, 4, 4).tokens.empty());
}

// ---- Hugging Face prompt lookup ------------------------------------------------------------------

TEST(RuleHfPromptLookup, FallsBackToShorterNgrams) {
  expect_match(hf_prompt_lookup(Tokens{4, 5, 6, 5}, 2, 4, 0), {6, 5}, 2, 1);
  expect_match(hf_prompt_lookup(Tokens{3, 3}, 5, 4, 0), {3}, 1, 1);
  EXPECT_TRUE(hf_prompt_lookup(Tokens{3}, 5, 4, 0).tokens.empty());
  EXPECT_TRUE(hf_prompt_lookup(Tokens{1, 2, 3}, 2, 4, 0).tokens.empty());
}

TEST(RuleHfPromptLookup, FirstWindowWithAContinuation) {
  expect_match(hf_prompt_lookup(Tokens{7, 1, 1}, 1, 4, 0), {1}, 2, 1);
  expect_match(hf_prompt_lookup(Tokens{1, 1, 1, 1}, 3, 4, 0), {1}, 3, 3);
}

TEST(RuleHfPromptLookup, MaxLength) {
  EXPECT_TRUE(hf_prompt_lookup(Tokens{1, 2, 1}, 2, 4, 4).tokens.empty());  // L + 1: only the target's token is left
  expect_match(hf_prompt_lookup(Tokens{1, 2, 1}, 2, 4, 5), {2, 1}, 1, 1);
  expect_match(hf_prompt_lookup(Tokens{1, 2, 1}, 2, 4, 0), {2, 1}, 1, 1);
}

// ---- n-gram tree ---------------------------------------------------------------------------------

std::vector<int64_t> positions(const std::vector<DraftSource>& s) {
  std::vector<int64_t> p;
  for (const DraftSource& d : s) p.push_back(d.position);
  return p;
}

TEST(RuleNgramTree, BranchesInBreadthFirstOrder) {
  const NgramTree t = ngram_tree_lookup(Tokens{1, 2, 3, 1, 2, 4, 1, 2}, 1, 3, 3, 10, 8);
  EXPECT_EQ(t.tree.tokens, (Tokens{3, 4, 1, 1, 2, 2}));
  EXPECT_EQ(t.tree.parents, (Tokens{-1, -1, 0, 1, 2, 3}));
  EXPECT_EQ(positions(t.sources), (std::vector<int64_t>{2, 5, 3, 6, 4, 7}));
  for (const DraftSource& s : t.sources) EXPECT_EQ(s.match_length, 2);
}

TEST(RuleNgramTree, RanksChildrenByOccurrences) {
  const Tokens h = {9, 1, 5, 1, 6, 1, 6, 1};
  NgramTree t = ngram_tree_lookup(h, 1, 1, 2, 1, 8);
  EXPECT_EQ(t.tree.tokens, (Tokens{6, 1}));
  EXPECT_EQ(t.tree.parents, (Tokens{-1, 0}));
  EXPECT_EQ(positions(t.sources), (std::vector<int64_t>{4, 5}));
  t = ngram_tree_lookup(h, 1, 1, 2, 2, 8);
  EXPECT_EQ(t.tree.tokens, (Tokens{6, 5, 1, 1}));
  EXPECT_EQ(t.tree.parents, (Tokens{-1, -1, 0, 1}));
  EXPECT_EQ(positions(t.sources), (std::vector<int64_t>{4, 2, 5, 3}));
  EXPECT_EQ(ngram_tree_lookup(h, 1, 1, 2, 2, 3).tree.tokens, (Tokens{6, 5, 1}));
  EXPECT_EQ(ngram_tree_lookup(Tokens{1, 2, 3, 4, 1}, 2, 3, 4, 10, 8).tree.size(), 0);
}

// ---- suffix trees --------------------------------------------------------------------------------

SuffixTree tree_of(const std::vector<Tokens>& seqs, int depth) {
  SuffixTree t(depth);
  for (std::size_t i = 0; i < seqs.size(); ++i) t.extend(static_cast<int64_t>(i), seqs[i]);
  return t;
}

SuffixSpeculation how(int k, float factor = 1.0f, float offset = 0.0f, float min_prob = 0.1f, bool tree = false) {
  SuffixSpeculation h;
  h.max_spec_tokens = k;
  h.spec_factor = factor;
  h.spec_offset = offset;
  h.min_token_prob = min_prob;
  h.tree = tree;
  return h;
}

const SuffixTree::Node* child(const SuffixTree::Node& n, int32_t t) {
  const auto it = n.children.find(t);
  return it == n.children.end() ? nullptr : it->second.get();
}

TEST(RuleSuffixTree, CountsEverySuffixCutAtTheDepth) {
  const SuffixTree t = tree_of({{1, 2, 1, 3}}, 2);
  EXPECT_EQ(t.root().count, 4);
  ASSERT_NE(child(t.root(), 1), nullptr);
  EXPECT_EQ(child(t.root(), 1)->count, 2);
  EXPECT_EQ(child(*child(t.root(), 1), 2)->count, 1);
  EXPECT_EQ(child(*child(t.root(), 1), 3)->count, 1);
  EXPECT_EQ(child(*child(*child(t.root(), 1), 2), 1), nullptr);  // depth 2: [1,2,1] is not held
  EXPECT_EQ(child(t.root(), 3)->count, 1);
  EXPECT_EQ(t.nodes(), 1u + 3u + 3u);  // root; 1, 2, 3; [1,2], [1,3], [2,1]
}

TEST(RuleSuffixTree, LongerMatchWinsTies) {
  // m = 3, 4, 5 all score 0.5 + 0.5 + 0.5.
  const SuffixTree t = tree_of({{1, 2, 3, 1, 2, 3, 1, 2}}, 24);
  const SuffixDraft d = speculate({&t}, Tokens{1, 2, 3, 1, 2, 3, 1, 2}, how(5));
  EXPECT_EQ(d.tokens, (Tokens{3, 1, 2}));
  EXPECT_EQ(d.parents, (Tokens{-1, 0, 1}));
  EXPECT_EQ(d.probs, (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(d.score, 1.5f);
  EXPECT_EQ(d.match_length, 5);
  for (std::size_t i = 0; i < d.refs.size(); ++i) EXPECT_EQ(d.refs[i].index, static_cast<int64_t>(5 + i));
}

TEST(RuleSuffixTree, PathTiesGoToTheSmallerTokenAndMinProbCuts) {
  const Tokens h = {1, 2, 1, 3, 1, 4, 1, 5, 1};
  const SuffixTree t = tree_of({h}, 24);
  SuffixDraft d = speculate({&t}, h, how(4));
  EXPECT_EQ(d.tokens, (Tokens{2}));
  EXPECT_EQ(d.probs, (std::vector<float>{1.0f / 5.0f}));
  d = speculate({&t}, h, how(4, 4.0f));
  EXPECT_EQ(d.tokens, (Tokens{2, 1, 3, 1}));
  EXPECT_EQ(d.score, 0.2f + 0.2f + 0.2f + 0.2f);
  EXPECT_TRUE(speculate({&t}, h, how(4, 1.0f, 0.0f, 0.25f)).tokens.empty());
  EXPECT_EQ(speculate({&t}, h, how(4, 1.0f, 0.0f, 0.2f)).tokens, (Tokens{2}));  // float(1/5) >= float(0.2)
}

TEST(RuleSuffixTree, BudgetFromFactorAndOffset) {
  const Tokens h = {1, 2, 3, 4, 5, 1, 2, 3, 4};
  const SuffixTree t = tree_of({h}, 24);
  const auto drafted = [&](int k, float factor, float offset) { return speculate({&t}, h, how(k, factor, offset)).tokens; };
  EXPECT_EQ(drafted(8, 1.0f, 0.0f), (Tokens{5, 1, 2, 3}));
  EXPECT_EQ(speculate({&t}, h, how(8)).match_length, 4);
  EXPECT_EQ(drafted(3, 1.0f, 0.0f), (Tokens{5, 1, 2}));
  EXPECT_EQ(drafted(8, 0.5f, 0.0f), (Tokens{5, 1}));
  EXPECT_EQ(drafted(8, 1.0f, -2.0f), (Tokens{5, 1}));
  EXPECT_EQ(drafted(8, 0.5f, 0.6f), (Tokens{5, 1}));
  EXPECT_EQ(drafted(8, 2.0f, 0.0f), (Tokens{5, 1, 2, 3, 4}));
  EXPECT_TRUE(drafted(8, 0.2f, 0.1f).empty());
  // Float steps: float(5) · 3.34f + 0.3f = 16.999998f, + 1e-6 truncates to 16 (in double: 17).
  Tokens long_h = {1, 2, 3, 4, 5};
  for (int32_t t = 10; t < 30; ++t) long_h.push_back(t);
  for (int32_t t = 1; t <= 5; ++t) long_h.push_back(t);
  const SuffixTree lt = tree_of({long_h}, 24);
  for (bool tree : {false, true}) {
    const SuffixDraft d = speculate({&lt}, std::span<const int32_t>(long_h).last(24), how(24, 3.34f, 0.3f, 0.1f, tree));
    EXPECT_EQ(d.tokens.size(), 16u);
    EXPECT_EQ(d.tokens.front(), 10);
    EXPECT_EQ(d.match_length, 5);
  }
}

TEST(RuleSuffixTree, TreeModeIsBestFirstWithTiesInQueueOrder) {
  const Tokens h = {1, 2, 1, 2, 1, 3, 5, 1};
  const SuffixTree t = tree_of({h}, 24);
  SuffixDraft d = speculate({&t}, h, how(4, 4.0f, 0.0f, 0.1f, true));
  EXPECT_EQ(d.tokens, (Tokens{2, 1, 3, 2}));
  EXPECT_EQ(d.parents, (Tokens{-1, 0, -1, 1}));
  EXPECT_EQ(d.probs, (std::vector<float>{0.5f, 0.5f, 0.25f, 0.25f}));
  std::vector<int64_t> refs;
  for (const SuffixRef& r : d.refs) refs.push_back(r.index);
  EXPECT_EQ(refs, (std::vector<int64_t>{3, 4, 5, 3}));  // the last occurrence of each node's string
  d = speculate({&t}, h, how(4, 4.0f));
  EXPECT_EQ(d.tokens, (Tokens{2, 1, 2, 1}));
  EXPECT_EQ(d.parents, (Tokens{-1, 0, 1, 2}));
}

TEST(RuleSuffixTree, UnionOfTreesCountsAsOneTree) {
  const std::vector<Tokens> seqs = {{1, 2, 1, 3, 1}, {2, 1, 2, 2, 1}, {3, 1, 2, 1}};
  const SuffixTree all = tree_of(seqs, 4);
  const SuffixTree a = tree_of({seqs[0], seqs[1]}, 4);
  const SuffixTree b = tree_of({seqs[2]}, 4);
  for (const Tokens& ctx : std::vector<Tokens>{{1, 2, 1}, {2, 1}, {3, 1}, {1, 1}, {5, 2, 2, 1}}) {
    for (bool tree : {false, true}) {
      const SuffixDraft x = speculate({&all}, ctx, how(6, 2.0f, 0.0f, 0.05f, tree));
      const SuffixDraft y = speculate({&a, &b}, ctx, how(6, 2.0f, 0.0f, 0.05f, tree));
      EXPECT_EQ(x.tokens, y.tokens);
      EXPECT_EQ(x.parents, y.parents);
      EXPECT_EQ(x.probs, y.probs);
      EXPECT_EQ(x.score, y.score);
      EXPECT_EQ(x.match_length, y.match_length);
    }
  }
}

// Two tries hold the same strings with the same counts.
void expect_same_trie(const SuffixTree::Node& x, const SuffixTree::Node& y, const std::string& at) {
  EXPECT_EQ(x.count, y.count) << at;
  ASSERT_EQ(x.children.size(), y.children.size()) << at;
  for (const auto& [token, c] : x.children) {
    const SuffixTree::Node* d = child(y, token);
    ASSERT_NE(d, nullptr) << at << " " << token;
    expect_same_trie(*c, *d, at + " " + std::to_string(token));
  }
}

TEST(RuleSuffixTree, RemoveLeavesTheTreeAsIfTheSequenceNeverWas) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int depth = 1 + static_cast<int>(rng() % 6);
    const int alphabet = 2 + static_cast<int>(rng() % 3);
    std::vector<Tokens> seqs(4);
    for (Tokens& s : seqs) {
      s.resize(rng() % 14);
      for (int32_t& t : s) t = static_cast<int32_t>(rng() % alphabet);
    }
    const auto gone = static_cast<int64_t>(rng() % seqs.size());
    SuffixTree with(depth), without(depth);
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      with.extend(static_cast<int64_t>(i), seqs[i]);
      if (static_cast<int64_t>(i) != gone) without.extend(static_cast<int64_t>(i), seqs[i]);
    }
    with.remove(gone);
    EXPECT_FALSE(with.holds(gone));
    const std::string label = "trial " + std::to_string(trial);
    expect_same_trie(with.root(), without.root(), label);
    EXPECT_EQ(with.nodes(), without.nodes()) << label;
    for (int c = 0; c < 20; ++c) {
      Tokens ctx(1 + rng() % 6);
      for (int32_t& t : ctx) t = static_cast<int32_t>(rng() % alphabet);
      for (bool tree : {false, true}) {
        const SuffixDraft x = speculate({&with}, ctx, how(8, 1.5f, 0.5f, 0.05f, tree));
        const SuffixDraft y = speculate({&without}, ctx, how(8, 1.5f, 0.5f, 0.05f, tree));
        EXPECT_EQ(x.tokens, y.tokens) << label;
        EXPECT_EQ(x.parents, y.parents) << label;
        EXPECT_EQ(x.probs, y.probs) << label;
        EXPECT_EQ(x.match_length, y.match_length) << label;
      }
    }
  }
}

TEST(RuleSuffixTree, RemovingEverythingLeavesTheRoot) {
  SuffixTree t = tree_of({{1, 2, 1}, {2, 2}}, 3);
  t.remove(5);  // not held: nothing happens
  EXPECT_EQ(t.root().count, 5);
  t.remove(0);
  t.remove(1);
  EXPECT_EQ(t.root().count, 0);
  EXPECT_TRUE(t.root().children.empty());
  EXPECT_EQ(t.nodes(), 1u);
  EXPECT_TRUE(speculate({&t}, Tokens{1, 2}, how(4)).tokens.empty());
}

// ---- the suffix proposer -------------------------------------------------------------------------

Proposal propose(SuffixOptions o, const std::vector<Tokens>& responses, const Tokens& history, int prompt_length) {
  std::shared_ptr<SuffixResponses> run = std::make_shared<SuffixResponses>(o.max_depth, o.max_cached);
  for (const Tokens& r : responses) run->finish(run->start(), r);
  SuffixProposer p(o, run);
  DraftContext ctx;
  ctx.sequence = &history;
  ctx.committed = static_cast<int>(history.size()) - 1;
  ctx.prompt_length = prompt_length;
  return p.propose(ctx);
}

SuffixOptions suffix_options(int k, float factor = 1.0f, int cached = 10000) {
  SuffixOptions o;
  o.k = k;
  o.spec_factor = factor;
  o.max_cached = cached;
  return o;
}

TEST(RuleSuffixProposer, EarlierResponsesBeatTheRequestsTree) {
  Proposal p = propose(suffix_options(4, 3.0f), {{1, 2, 3}, {4, 1, 2, 3}}, {7, 8, 1}, 2);
  EXPECT_EQ(p.tree.tokens, (Tokens{2, 3}));
  ASSERT_EQ(p.sources.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(p.sources[i].origin, DraftSource::Origin::responses);
    EXPECT_EQ(p.sources[i].request, 1);
    EXPECT_EQ(p.sources[i].position, 2 + i);
  }
  // Equal scores keep the request's own tree.
  p = propose(suffix_options(4), {{1, 2}}, {1, 2, 5, 1}, 3);
  EXPECT_EQ(p.tree.tokens, (Tokens{2}));
  EXPECT_EQ(p.sources[0].origin, DraftSource::Origin::context);
  EXPECT_EQ(p.sources[0].position, 1);
  p = propose(suffix_options(4), {{1, 2}, {1, 2}}, {1, 2, 5, 1}, 3);
  EXPECT_EQ(p.sources[0].origin, DraftSource::Origin::responses);
  // The run's tree holds this request's output too; its sources are positions in the history.
  p = propose(suffix_options(4), {}, {1, 4, 1, 4, 1, 2, 5, 1, 2, 6, 1}, 4);
  EXPECT_EQ(p.tree.tokens, (Tokens{2}));
  EXPECT_EQ(p.sources[0].origin, DraftSource::Origin::context);
  EXPECT_EQ(p.sources[0].position, 8);
}

TEST(RuleSuffixProposer, OldestResponsesAreEvicted) {
  const std::vector<Tokens> responses = {{1, 2}, {1, 2}, {1, 3}, {1, 3}};
  Proposal p = propose(suffix_options(4, 1.0f, 2), responses, {9, 1}, 1);
  EXPECT_EQ(p.tree.tokens, (Tokens{3}));
  EXPECT_EQ(p.sources[0].request, 3);
  p = propose(suffix_options(4, 1.0f, 4), responses, {9, 1}, 1);
  EXPECT_EQ(p.tree.tokens, (Tokens{2}));
  EXPECT_EQ(p.sources[0].request, 1);
  EXPECT_TRUE(propose(suffix_options(4, 1.0f, 0), responses, {9, 1}, 1).tree.tokens.empty());
}

TEST(RuleSuffixProposer, MaxModelLenLeavesRoomForTheBonusToken) {
  const Tokens h = {1, 2, 3, 4, 5, 1, 2, 3, 4};  // L = 9
  SuffixOptions o = suffix_options(8);
  o.max_model_len = 12;  // vLLM: at most max_model_len − L − 1 = 2 drafts
  EXPECT_EQ(propose(o, {}, h, 8).tree.tokens, (Tokens{5, 1}));
  o.max_model_len = 10;
  EXPECT_TRUE(propose(o, {}, h, 8).tree.tokens.empty());
  o.max_model_len = 0;  // no limit
  EXPECT_EQ(propose(o, {}, h, 8).tree.tokens, (Tokens{5, 1, 2, 3}));
}

}  // namespace
}  // namespace specdec
