// Decision margins: how far a token decision is from flipping, for every sampling mode. The
// margin must be exact in the sense that matters: raising the runner-up by a bit more than the
// margin flips the decision, by a bit less does not.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "validation/decision_margin.hpp"
#include "validation/validation_report.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec::validation {
namespace {

std::vector<float> random_row(int V, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> row(static_cast<size_t>(V));
  for (float& x : row) x = n(rng);
  return row;
}

SamplingParams params(SamplingParams::Mode mode) {
  SamplingParams s;
  s.mode = mode;
  s.temperature = mode == SamplingParams::Mode::greedy ? 1.0 : 0.7;
  s.seed = 11;
  return s;
}

// Greedy and coupled: the margin is the runner-up's distance to flipping, in logit units.
TEST(DecisionMargin, ChoiceFlipsExactlyBeyondTheMargin) {
  for (auto mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::coupled}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const int V = 50;
      const std::vector<float> row = random_row(V, seed);
      const SamplingParams sp = params(mode);
      const int32_t position = 7 + static_cast<int32_t>(seed);
      const Decision d = token_decision(row.data(), V, sp, 0, position);
      const std::string what = to_string(mode) + " seed " + std::to_string(seed);
      ASSERT_EQ(d.kind, DecisionKind::choice) << what;
      EXPECT_EQ(d.token, sample_token(row.data(), V, sp, 0, static_cast<uint32_t>(position))) << what;
      ASSERT_GE(d.runner_up, 0) << what;
      ASSERT_GT(d.margin, 1e-3) << what << ": pick seeds without natural near-ties";
      std::vector<float> more = row, less = row;
      more[static_cast<size_t>(d.runner_up)] += static_cast<float>(d.margin * 1.01);
      less[static_cast<size_t>(d.runner_up)] += static_cast<float>(d.margin * 0.99);
      EXPECT_EQ(sample_token(more.data(), V, sp, 0, static_cast<uint32_t>(position)), d.runner_up) << what;
      EXPECT_EQ(sample_token(less.data(), V, sp, 0, static_cast<uint32_t>(position)), d.token) << what;
    }
  }
}

// Sample mode: the margin is u's distance to the chosen token's CDF interval boundaries.
TEST(DecisionMargin, DrawMarginIsTheDistanceToTheCdfBoundary) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int V = 30;
    const std::vector<float> row = random_row(V, seed);
    const SamplingParams sp = params(SamplingParams::Mode::sample);
    const int32_t position = 3 + static_cast<int32_t>(seed);
    const Decision d = token_decision(row.data(), V, sp, 0, position);
    const std::string what = "seed " + std::to_string(seed);
    ASSERT_EQ(d.kind, DecisionKind::draw) << what;
    EXPECT_EQ(d.token, sample_token(row.data(), V, sp, 0, static_cast<uint32_t>(position))) << what;
    const std::vector<double> p = probabilities(row.data(), V, sp);
    const double u = uniform(sp.seed, 0, static_cast<uint32_t>(position), RandomPurpose::sample, 0);
    double lo = 0;
    for (int i = 0; i < d.token; ++i) lo += p[static_cast<size_t>(i)];
    const double hi = lo + p[static_cast<size_t>(d.token)];
    ASSERT_LE(lo, u) << what;
    ASSERT_LT(u, hi) << what;
    const double expected = std::min(d.token > 0 ? u - lo : INFINITY, d.token < V - 1 ? hi - u : INFINITY);
    EXPECT_DOUBLE_EQ(d.margin, expected) << what;
    EXPECT_EQ(d.runner_up, (u - lo <= hi - u && d.token > 0) || d.token == V - 1 ? d.token - 1 : d.token + 1) << what;
  }
}

// The decisions of a verify step are those of the real acceptors: same tests, same outcomes,
// same tokens, for chains and trees, deterministic and sampled drafts.
TEST(DecisionMargin, VerifyDecisionsReplayTheAcceptors) {
  const int V = 12;
  const DraftTree chain = DraftTree::chain({3, 5, 7, 2});
  const DraftTree tree{{3, 4, 5, 6, 7, 1}, {-1, -1, 0, 0, 1, 2}};
  for (const DraftTree* t : {&chain, &tree}) {
    for (auto mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::coupled, SamplingParams::Mode::sample}) {
      for (uint64_t seed = 1; seed <= 15; ++seed) {
        Matrix logits(t->size() + 1, V);
        for (int r = 0; r <= t->size(); ++r) {
          const std::vector<float> row = random_row(V, seed * 100 + static_cast<uint64_t>(r));
          std::copy(row.begin(), row.end(), logits.row(r).data());
        }
        // Make the drafts likely enough to be accepted sometimes.
        for (int n = 0; n < t->size(); ++n) logits(t->parents[n] + 1, t->tokens[n]) += 3.0f;
        std::vector<std::vector<double>> q;
        const SamplingParams sp = params(mode);
        VerifyInput in;
        in.tree = t;
        in.target_logits = &logits;
        in.draft_probs = &q;
        in.sampling = sp;
        in.root_position = 20;
        const VerifyResult r = default_acceptor(sp)->verify(in);
        const std::vector<Decision> ds = verify_decisions(in);
        const std::string what = to_string(mode) + (t == &chain ? " chain" : " tree") + " seed " + std::to_string(seed);
        if (mode == SamplingParams::Mode::sample) {
          ASSERT_EQ(ds.size(), r.decisions.size() + 1) << what;
          for (size_t i = 0; i < r.decisions.size(); ++i) {
            EXPECT_EQ(ds[i].kind, DecisionKind::test) << what;
            EXPECT_EQ(ds[i].accepted, r.decisions[i] != 0) << what;
            EXPECT_EQ(ds[i].node, r.decision_nodes[i]) << what;
            EXPECT_GE(ds[i].margin, 0.0) << what;
          }
          EXPECT_EQ(ds.back().kind, DecisionKind::draw) << what;
          EXPECT_EQ(ds.back().token, r.emitted.back()) << what;
        } else {
          ASSERT_EQ(ds.size(), r.emitted.size()) << what;
          for (size_t i = 0; i < ds.size(); ++i) {
            EXPECT_EQ(ds[i].token, r.emitted[i]) << what;
            EXPECT_EQ(ds[i].position, 20 + static_cast<int32_t>(i)) << what;
            EXPECT_EQ(ds[i].row, i == 0 ? 0 : r.accepted_nodes[i - 1] + 1) << what;
          }
        }
      }
    }
  }
}

// The match path follows the child holding each chosen token, with rows and positions along it,
// and stops at the first choice no child holds.
TEST(DecisionMargin, MatchPathFollowsTheChosenTokens) {
  const DraftTree tree{{3, 4, 5, 6, 7, 1}, {-1, -1, 0, 0, 1, 2}};
  // Chosen token per row: the root picks node 0 (3), row 1 picks node 3 (6), row 4 a token no
  // child of node 3 holds.
  const std::vector<int32_t> chosen = {3, 6, 0, 0, 9, 0, 0};
  std::vector<int> rows_asked;
  const std::vector<Decision> ds = match_path_decisions(tree, 20, [&](int row, int32_t position) {
    rows_asked.push_back(row);
    Decision d;
    d.token = chosen.at(static_cast<size_t>(row));
    d.position = position;
    return d;
  });
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(rows_asked, (std::vector<int>{0, 1, 4}));
  const std::vector<int> rows = {0, 1, 4};
  const std::vector<int32_t> tokens = {3, 6, 9};
  for (size_t i = 0; i < ds.size(); ++i) {
    EXPECT_EQ(ds[i].row, rows[i]) << "decision " << i;
    EXPECT_EQ(ds[i].position, 20 + static_cast<int32_t>(i)) << "decision " << i;
    EXPECT_EQ(ds[i].token, tokens[i]) << "decision " << i;
  }
  // A root choice no draft holds is the only decision.
  const std::vector<Decision> one = match_path_decisions(tree, 5, [](int, int32_t position) {
    Decision d;
    d.token = 11;
    d.position = position;
    return d;
  });
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].row, 0);
  EXPECT_EQ(one[0].position, 5);
}

// A top-k summary gives the greedy choice and its margin; k = 1 cannot give a margin.
TEST(DecisionMargin, TopKChoice) {
  const Decision d = topk_choice({4, 9, 2}, {3.5f, 3.25f, 1.0f}, 10, 5);
  EXPECT_EQ(d.token, 4);
  EXPECT_EQ(d.runner_up, 9);
  EXPECT_DOUBLE_EQ(d.margin, 0.25);
  EXPECT_TRUE(std::isnan(topk_choice({4}, {3.5f}, 10, 5).margin));
  EXPECT_TRUE(std::isinf(topk_choice({0}, {3.5f}, 1, 5).margin));
}

// What a run's compared steps exercised: acceptance tests, the token after a rejection (the
// last accepted node, or the root, has children) and the bonus after a leaf.
TEST(DecisionCoverage, CountsEachRuleTheStepsExercised) {
  StepRecord prefill;  // no drafts: nothing counted
  prefill.emitted_tokens = {5};
  StepRecord rejected_in_tree;  // root children 0 and 1, node 2 under 0: 0 accepted, 2 rejected
  rejected_in_tree.draft_tokens = {7, 8, 9};
  rejected_in_tree.draft_parents = {-1, -1, 0};
  rejected_in_tree.accepted_path = {0};
  rejected_in_tree.accept_decisions = {1, 0};
  rejected_in_tree.accept_nodes = {0, 2};
  StepRecord to_the_leaf;  // a chain of two, both accepted: the bonus
  to_the_leaf.draft_tokens = {3, 4};
  to_the_leaf.draft_parents = {-1, 0};
  to_the_leaf.accepted_path = {0, 1};
  to_the_leaf.accept_decisions = {1, 1};
  StepRecord first_rejected;  // the root's only child rejected
  first_rejected.draft_tokens = {6};
  first_rejected.draft_parents = {-1};
  first_rejected.accept_decisions = {0};
  const std::vector<StepRecord> steps = {prefill, rejected_in_tree, to_the_leaf, first_rejected};
  const DecisionCoverage all = decision_coverage(steps, 4, true);
  EXPECT_TRUE(all.speculative);
  EXPECT_EQ(all.tests, 5);
  EXPECT_EQ(all.accepted, 3);
  EXPECT_EQ(all.rejected, 2);
  EXPECT_EQ(all.after_rejection, 2);
  EXPECT_EQ(all.bonus, 1);
  EXPECT_TRUE(coverage_gaps(all).empty());
  // The first two steps: one rejection and the token after it, no bonus.
  const DecisionCoverage two = decision_coverage(steps, 2, true);
  EXPECT_EQ(two.bonus, 0);
  ASSERT_EQ(coverage_gaps(two).size(), 1u);
  EXPECT_NE(coverage_gaps(two)[0].find("no draft was accepted to its end: the bonus token went untested"), std::string::npos);
  // The leaf alone, greedy: neither a rejection nor the token after one was tested.
  const DecisionCoverage leaf = decision_coverage({to_the_leaf}, 1, false);
  const std::vector<std::string> gaps = coverage_gaps(leaf);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_NE(gaps[0].find("no draft was rejected"), std::string::npos) << gaps[0];
  EXPECT_NE(gaps[1].find("the target's choice after a rejection went untested"), std::string::npos) << gaps[1];
  EXPECT_NE(coverage_gaps(decision_coverage({first_rejected}, 1, true))[0].find("bonus"), std::string::npos);
  EXPECT_NE(coverage_gaps(decision_coverage({to_the_leaf}, 1, true))[1].find("residual distribution max(0, p - q)"), std::string::npos);
  // A run that never drafted reports no gap.
  EXPECT_TRUE(coverage_gaps(decision_coverage({prefill}, 1, true)).empty());
}

}  // namespace
}  // namespace specdec::validation
