// Acceptance models: closed forms, limits, monotonicity, trees and replay.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "simulator/acceptance.hpp"
#include "simulator/tree_shape.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

TEST(Acceptance, IidMatchesLeviathanClosedFormAndLimits) {
  for (double a : {0.0, 0.3, 0.6, 0.8, 0.95, 1.0})
    for (int k = 0; k <= 8; ++k) {
      double sum = 0;  // Σ_{i=0..k} α^i, the series the closed form sums
      for (int i = 0; i <= k; ++i) sum += std::pow(a, i);
      EXPECT_NEAR(iid_acceptance(a)->expected_tokens(k), sum, 1e-12) << "alpha " << a << " K " << k;
    }
  EXPECT_DOUBLE_EQ(iid_acceptance(1.0)->expected_tokens(7), 8.0);   // α → 1: every draft + bonus
  EXPECT_DOUBLE_EQ(iid_acceptance(0.0)->expected_tokens(7), 1.0);   // α → 0: the bonus only
  EXPECT_NEAR(iid_acceptance(1.0 - 1e-9)->expected_tokens(7), 8.0, 1e-6);
  EXPECT_DOUBLE_EQ(iid_acceptance(0.7)->expected_tokens(0), 1.0);   // K = 0 is plain decoding
  // Leviathan's speedup: with c = 0 it is the expected tokens; at α = 0 it is 1 / (cK + 1).
  EXPECT_DOUBLE_EQ(leviathan_speedup(0.8, 4, 0.0), leviathan_expected_tokens(0.8, 4));
  EXPECT_DOUBLE_EQ(leviathan_speedup(0.0, 4, 0.25), 0.5);
}

TEST(Acceptance, MonotoneInKAndAlpha) {
  for (double a : {0.2, 0.5, 0.9})
    for (int k = 1; k <= 10; ++k) {
      EXPECT_GT(iid_acceptance(a)->expected_tokens(k), iid_acceptance(a)->expected_tokens(k - 1)) << a << " " << k;
      EXPECT_GT(iid_acceptance(a + 0.05)->expected_tokens(k), iid_acceptance(a)->expected_tokens(k)) << a << " " << k;
    }
}

TEST(Acceptance, ConditionalVectorGeneralisesIid) {
  auto c = conditional_acceptance({0.8, 0.8, 0.8, 0.8});
  for (int k = 0; k <= 4; ++k) EXPECT_NEAR(c->expected_tokens(k), iid_acceptance(0.8)->expected_tokens(k), 1e-12);
  auto d = conditional_acceptance({0.9, 0.5, 0.1});
  EXPECT_NEAR(d->expected_tokens(3), 1 + 0.9 + 0.45 + 0.045, 1e-12);
  EXPECT_NE(error_of([&] { d->expected_tokens(4); }).find("answers K up to 3"), std::string::npos);
  EXPECT_NE(error_of([&] { conditional_acceptance({0.5, 1.2}); }).find("acceptance[2] must be a probability"),
            std::string::npos);
  EXPECT_NE(error_of([&] { conditional_acceptance({}); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([&] { iid_acceptance(-0.1); }).find("must be a probability"), std::string::npos);
  EXPECT_NE(error_of([&] { d->expected_tokens(-1); }).find("K must be >= 0"), std::string::npos);
}

TEST(Acceptance, TableAndItsErrors) {
  auto t = table_acceptance({{2, 2.10}, {3, 2.29}});
  EXPECT_DOUBLE_EQ(t->expected_tokens(3), 2.29);
  EXPECT_DOUBLE_EQ(t->expected_tokens(0), 1.0);
  EXPECT_NE(error_of([&] { t->expected_tokens(1); }).find("no entry for K = 1"), std::string::npos);
  EXPECT_NE(error_of([&] { table_acceptance({{2, 3.5}}); }).find("must be in [1, 3]"), std::string::npos);
}

// A table answers exactly its K (what a search may evaluate), and says which K it holds.
TEST(Acceptance, TableAnswersOnlyItsK) {
  auto t = table_acceptance({{2, 2.10}, {4, 2.60}});
  for (int k = 0; k <= 6; ++k) EXPECT_EQ(t->answers(k), k == 0 || k == 2 || k == 4) << "K = " << k;
  EXPECT_EQ(t->describe(), "measured AL table (K = 2, 4)");
  auto iid = iid_acceptance(0.7);
  EXPECT_TRUE(iid->answers(100));
  EXPECT_FALSE(iid->answers(-1));
  auto replay = replay_acceptance({0, 4, 2}, 4);
  EXPECT_TRUE(replay->answers(4));
  EXPECT_FALSE(replay->answers(5));
}

// Measured P(accepted >= d): AL(K) sums the first K entries, the same model as the implied
// conditional vector; its errors name the depth.
TEST(Acceptance, ByDepthSumsTheMeasuredFractions) {
  const std::vector<double> reached = {0.8, 0.6, 0.45, 0.0};
  auto d = acceptance_by_depth(reached);
  EXPECT_EQ(d->max_k(), 4);
  double al = 1.0;
  for (int k = 1; k <= 4; ++k) {
    al += reached[k - 1];
    EXPECT_NEAR(d->expected_tokens(k), al, 1e-12) << "K = " << k;
  }
  auto c = conditional_acceptance({0.8, 0.75, 0.75, 0.0});
  for (int k = 0; k <= 4; ++k) EXPECT_NEAR(d->expected_tokens(k), c->expected_tokens(k), 1e-12) << "K = " << k;
  EXPECT_FALSE(d->answers(5));
  EXPECT_NE(error_of([&] { acceptance_by_depth({0.5, 0.6}); }).find("P(accepted >= 2) = 0.6 exceeds P(accepted >= 1) = 0.5"),
            std::string::npos);
  EXPECT_NE(error_of([&] { acceptance_by_depth({1.2}); }).find("must be a probability"), std::string::npos);
  EXPECT_NE(error_of([&] { acceptance_by_depth({}); }).find("is empty"), std::string::npos);
  EXPECT_DOUBLE_EQ(acceptance_by_depth({0.0, 0.0})->expected_tokens(2), 1.0);
}

// Replaying recorded steps at a smaller K truncates each step's accepted count exactly.
TEST(Acceptance, ReplayTruncatesExactly) {
  const std::vector<int> accepted = {0, 5, 2, 3, 5, 1};
  auto r = replay_acceptance(accepted, 5);
  EXPECT_DOUBLE_EQ(r->expected_tokens(5), 1.0 + 16.0 / 6.0);
  EXPECT_DOUBLE_EQ(r->expected_tokens(2), 1.0 + (0 + 2 + 2 + 2 + 2 + 1) / 6.0);
  EXPECT_DOUBLE_EQ(r->conditional(1, 0), 5.0 / 6.0);  // steps reaching depth 1 / all
  EXPECT_DOUBLE_EQ(r->conditional(3, 0), 3.0 / 4.0);  // ≥ 3 of those ≥ 2
  EXPECT_NE(error_of([&] { r->expected_tokens(6); }).find("answers K up to 5"), std::string::npos);
  EXPECT_NE(error_of([&] { replay_acceptance({1, 7}, 5); }).find("step 1 accepted 7"), std::string::npos);
  // A replay of i.i.d. Bernoulli runs converges to the closed form (seed 7).
  std::mt19937 rng(7);
  std::bernoulli_distribution accept(0.7);
  std::vector<int> sim;
  for (int i = 0; i < 200000; ++i) {
    int a = 0;
    while (a < 6 && accept(rng)) ++a;
    sim.push_back(a);
  }
  EXPECT_NEAR(replay_acceptance(sim, 6)->expected_tokens(6), leviathan_expected_tokens(0.7, 6), 0.02) << "seed 7";
}

// vLLM's synthetic_acceptance_length resolves to the minimum-variance schedule; it equals the same
// rates given as acceptance by depth, and answers only K with AL <= K + 1.
TEST(Acceptance, SyntheticLengthIsTheMinimumVarianceSchedule) {
  const AcceptancePtr s = synthetic_acceptance_length(3.78);
  const AcceptancePtr rates = acceptance_by_depth({1.0, 1.0, 0.78, 0.0, 0.0, 0.0, 0.0});
  EXPECT_FALSE(s->answers(1));
  EXPECT_FALSE(s->answers(2));
  for (int k = 3; k <= 7; ++k) {
    ASSERT_TRUE(s->answers(k)) << "K " << k;
    EXPECT_NEAR(s->expected_tokens(k), 3.78, 1e-12) << "K " << k;
    EXPECT_NEAR(s->expected_tokens(k), rates->expected_tokens(k), 1e-12) << "K " << k;
  }
  for (int d = 1; d <= 5; ++d) EXPECT_NEAR(s->conditional(d, 0), rates->conditional(d, 0), 1e-12) << "depth " << d;
  EXPECT_EQ(s->conditional(1, 1), 0.0) << "a forced rate has no second candidate";
  EXPECT_NE(error_of([&] { s->expected_tokens(2); }).find("needs K >= 3 drafts (AL <= K + 1), got K = 2"), std::string::npos);
  EXPECT_NEAR(synthetic_acceptance_length(1.0)->expected_tokens(4), 1.0, 1e-12);
  EXPECT_NEAR(synthetic_acceptance_length(4.0)->expected_tokens(3), 4.0, 1e-12) << "AL = K + 1: every draft accepted";
  for (double bad : {0.5, std::nan(""), double(INFINITY)})
    EXPECT_NE(error_of([&] { synthetic_acceptance_length(bad); }).find("must be a finite number >= 1"), std::string::npos) << bad;
}

TEST(Trees, ChoicesAndBuiltins) {
  const TreeShape t = builtin_tree("mc_sim_7b_63");
  EXPECT_EQ(t.size(), 25);
  EXPECT_EQ(t.max_depth(), 5);
  EXPECT_EQ(t.nodes_at_depth(1), 4);
  EXPECT_EQ(t.nodes_at_depth(5), 2);
  EXPECT_EQ(t.nodes_at_depth(6), 0);
  int leaves = 0;
  for (int i = 0; i < t.size(); ++i) {
    leaves += t.has_children(i) ? 0 : 1;
    if (t.parents[i] >= 0) {
      EXPECT_LT(t.parents[i], i) << "parents precede children";
      EXPECT_EQ(t.depths[t.parents[i]] + 1, t.depths[i]);
    }
  }
  EXPECT_EQ(t.num_leaves(), leaves);
  EXPECT_EQ(builtin_tree("chain3").num_leaves(), 1);
  EXPECT_EQ(builtin_tree("chain3").paths, (TreeChoices{{0}, {0, 0}, {0, 0, 0}}));
  EXPECT_NE(error_of([] { make_tree_shape({{0}, {0, 1, 0}}, "t"); }).find("has no parent path"), std::string::npos);
  EXPECT_NE(error_of([] { make_tree_shape({{0}, {0}}, "t"); }).find("listed twice"), std::string::npos);
  EXPECT_NE(error_of([] { make_tree_shape({}, "t"); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { builtin_tree("bushy"); }).find("unknown built-in tree"), std::string::npos);
}

TEST(Trees, ExpectedTokens) {
  auto a = iid_acceptance(0.6);
  // A chain tree equals the chain formula.
  EXPECT_NEAR(tree_expected_tokens(builtin_tree("chain5"), *a), a->expected_tokens(5), 1e-12);
  // Two candidates at depth 1 under per-rank acceptance: 1 + p0 + (1 − p0)·p1.
  auto pr = tree_acceptance({{0.6, 0.3}});
  EXPECT_NEAR(tree_expected_tokens(make_tree_shape({{0}, {1}}, "t"), *pr), 1 + 0.6 + 0.4 * 0.3, 1e-12);
  // Adding nodes never lowers the expected tokens.
  auto table = tree_acceptance({{0.7, 0.3, 0.2, 0.1}, {0.7, 0.3, 0.2}, {0.7, 0.3, 0.2}, {0.7, 0.3}, {0.7, 0.3}});
  const double chain = tree_expected_tokens(builtin_tree("chain5"), *table);
  const double mc = tree_expected_tokens(builtin_tree("mc_sim_7b_63"), *table);
  EXPECT_GT(mc, chain);
  // The best tree with budget K + 1 and one child per node is the chain.
  const TreeShape best1 = best_tree(*table, 6, 5, 1);
  EXPECT_EQ(best1.size(), 5);
  EXPECT_NEAR(tree_expected_tokens(best1, *table), chain, 1e-12);
  // With the same 25-node budget, the best tree beats the fixed one.
  const TreeShape best = best_tree(*table, 26, 5, 4);
  EXPECT_EQ(best.size(), 25);
  // Its paths are the parent's path plus the rank, parents first; laid out again by
  // make_tree_shape (which reorders the nodes) it expects the same tokens.
  for (int i = 0; i < best.size(); ++i) {
    std::vector<int> path = best.parents[i] < 0 ? std::vector<int>{} : best.paths[best.parents[i]];
    path.push_back(best.ranks[i]);
    EXPECT_EQ(best.paths[i], path);
    EXPECT_LT(best.parents[i], i);
    EXPECT_EQ(int(best.paths[i].size()), best.depths[i]);
  }
  EXPECT_NEAR(tree_expected_tokens(make_tree_shape(best.paths, "best"), *table), tree_expected_tokens(best, *table),
              1e-12);
  EXPECT_GE(tree_expected_tokens(best, *table), mc - 1e-12);
  EXPECT_NE(error_of([&] { best_tree(*table, 20, 6, 4); }).find("exceeds"), std::string::npos);
}

}  // namespace
}  // namespace specdec::sim
