// Searches over draft configurations: the best K and the best EAGLE-2 tree are argmins over what
// the acceptance data answers, and every setting it cannot answer is listed, not extrapolated.
#include <gtest/gtest.h>

#include "simulator/search.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;
using test::scenario;

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int k = lo; k <= hi; ++k) v.push_back(k);
  return v;
}

std::vector<int> evaluated(const BestK& b) {
  std::vector<int> ks;
  for (const auto& p : b.all) ks.push_back(p.k);
  return ks;
}

TEST(Search, BestKIsTheArgmin) {
  for (double alpha : {0.5, 0.8, 0.95}) {
    Scenario s = scenario("llama-3.1-70b", "h200", "eagle3-llama3.3-70b", 1, alpha);
    s.workload.tp = 4;
    const BestK b = best_k(s, range(1, 10));
    ASSERT_EQ(b.all.size(), 10u);
    EXPECT_TRUE(b.skipped.empty());
    for (const auto& p : b.all) EXPECT_GE(p.tpot_s, b.best.tpot_s) << "alpha " << alpha << " K " << p.k;
    EXPECT_EQ(b.all[b.k - 1].k, b.k);
    s.plan.k = b.k;
    EXPECT_DOUBLE_EQ(predict(s).tpot_s, b.best.tpot_s) << "alpha " << alpha;
  }
  // Better acceptance never shortens the best draft.
  Scenario lo = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 1, 0.5);
  Scenario hi = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 1, 0.9);
  EXPECT_LE(best_k(lo, range(1, 12)).k, best_k(hi, range(1, 12)).k);
}

// A chosen set of K is searched as given (sorted, duplicates once); a table answers its own K, a
// trace recorded at K = 4 answers K <= 4, and the rest is listed with the reason.
TEST(Search, BestKEvaluatesWhatTheDataCovers) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 1, 0.8);
  EXPECT_EQ(evaluated(best_k(s, {6, 2, 4, 2})), (std::vector<int>{2, 4, 6}));

  s.acceptance = table_acceptance({{2, 2.6}, {4, 3.2}, {6, 3.5}});
  BestK b = best_k(s, range(1, 8));
  EXPECT_EQ(evaluated(b), (std::vector<int>{2, 4, 6}));
  ASSERT_EQ(b.skipped.size(), 5u);
  EXPECT_EQ(b.skipped[0].setting, "K = 1");
  EXPECT_NE(b.skipped[0].reason.find("measured AL table (K = 2, 4, 6)' has no AL for it"), std::string::npos)
      << b.skipped[0].reason;

  s.acceptance = replay_acceptance({0, 4, 2, 3, 1, 4}, 4);
  b = best_k(s, range(1, 8));
  EXPECT_EQ(evaluated(b), range(1, 4));
  ASSERT_EQ(b.skipped.size(), 4u);
  EXPECT_EQ(b.skipped.back().setting, "K = 8");

  s.acceptance = table_acceptance({{4, 3.0}});
  EXPECT_NE(error_of([&] { best_k(s, {1, 2}); }).find("none of K = 1..2 can be evaluated"), std::string::npos);
  EXPECT_NE(error_of([&] { best_k(s, {0, 4}); }).find("K must be >= 1, got 0"), std::string::npos);
}

TEST(Search, PeagleDepthBeyondItsTrainingIsSkipped) {
  Scenario s = scenario("gpt-oss-120b", "h200", "peagle-gpt-oss-120b", 1, 0.8);
  const BestK b = best_k(s, range(1, 10));
  EXPECT_EQ(evaluated(b), range(1, 8));
  ASSERT_EQ(b.skipped.size(), 2u);
  EXPECT_NE(b.skipped[0].reason.find("trained for up to 8 parallel positions"), std::string::npos) << b.skipped[0].reason;
  EXPECT_NE(error_of([&] { best_dynamic_tree(s, {32}, {4}, {4}); }).find("P-EAGLE drafts no dynamic tree"), std::string::npos);
}

TEST(Search, RefusesWhatItCannotSearch) {
  Scenario s = scenario("llama-3.1-8b", "h100-sxm", "", 0, 0);
  EXPECT_NE(error_of([&] { best_k(s, {1, 2}); }).find("undefined for sequential"), std::string::npos);
  s = scenario("llama-3.1-8b", "h100-sxm", "eagle3-llama3.1-8b", 4, 0.8);
  s.acceptance = nullptr;
  s.measured_tokens_per_step = 3.0;
  EXPECT_NE(error_of([&] { best_k(s, {1, 2}); }).find("a measured AL belongs to the one configuration"), std::string::npos);
  EXPECT_NE(error_of([&] { best_dynamic_tree(s, {32}, {4}, {4}); }).find("a measured AL"), std::string::npos);
}

// Every combination of the grid is an EAGLE-2 tree priced like --dynamic-tree; the best is the
// argmin, and depths the acceptance table does not reach are skipped.
TEST(Search, BestDynamicTreeIsTheArgminOverTheGrid) {
  Scenario s = scenario("vicuna-7b", "a100-80gb-sxm", "eagle1-vicuna-7b", 0, 0.8);
  s.engine = SpecLibrary().engine("sglang");  // one that verifies trees
  s.acceptance = tree_acceptance({{0.7, 0.2, 0.1}, {0.7, 0.2, 0.1}, {0.6, 0.2}, {0.6, 0.2}, {0.5, 0.2}, {0.5, 0.2}});
  const BestTree b = best_dynamic_tree(s, {16, 32, 64}, {3, 5, 6, 8}, {2, 4});
  EXPECT_EQ(b.all.size(), 18u);
  ASSERT_EQ(b.skipped.size(), 6u);
  EXPECT_EQ(b.skipped[0].setting, "total 16, depth 8, top-k 2");
  EXPECT_NE(b.skipped[0].reason.find("no answer at depth 7"), std::string::npos) << b.skipped[0].reason;
  for (const auto& c : b.all) {
    EXPECT_GE(c.prediction.tpot_s, b.best.tpot_s);
    Scenario one = s;
    one.plan.tree = best_tree(*s.acceptance, c.setting.total_tokens, c.setting.depth, c.setting.top_k);
    one.plan.dynamic_depth = c.setting.depth;  // drafted beam-style, as --dynamic-tree prices it
    one.plan.dynamic_top_k = c.setting.top_k;
    EXPECT_DOUBLE_EQ(predict(one).tpot_s, c.prediction.tpot_s)
        << "total " << c.setting.total_tokens << " depth " << c.setting.depth << " top-k " << c.setting.top_k;
  }
  EXPECT_EQ(b.tree.size(), b.best.tree_nodes);
  EXPECT_NE(error_of([&] { best_dynamic_tree(s, {1}, {4}, {4}); }).find("total_tokens must be >= 2"), std::string::npos);
  EXPECT_NE(error_of([&] { best_dynamic_tree(s, {32}, {8}, {4}); }).find("no combination can be evaluated"),
            std::string::npos);
}

}  // namespace
}  // namespace specdec::sim
