// Skewed expert popularity (simulator/expert_popularity.hpp): the Gamma mid-quantile profile, the
// published routing measures, the coverage formula under skew against a simulation of the routing
// it models, and the spec field fitted to published statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "simulator/expert_popularity.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/operators.hpp"
#include "simulator/spec_library.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

TEST(ExpertPopularity, UniformAtZeroAndMeanOneAscendingOtherwise) {
  for (int E : {1, 8, 128, 256})
    for (double cv : {0.0, 0.3, 1.0, 1.167, 2.5, kMaxExpertLoadCv}) {
      const auto& w = expert_popularity(E, cv);
      ASSERT_EQ(int(w.size()), E) << "E " << E << " cv " << cv;
      EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0) / E, 1.0, 1e-12) << "E " << E << " cv " << cv;
      for (int i = 0; i < E; ++i) {
        EXPECT_GE(w[i], 0.0);
        if (cv == 0.0 || E == 1) EXPECT_DOUBLE_EQ(w[i], 1.0) << "E " << E << " cv " << cv;
        if (i > 0 && E > 1 && cv > 0) EXPECT_GT(w[i], w[i - 1]) << "E " << E << " cv " << cv << " i " << i;
      }
    }
}

// With many experts the profile's own CV approaches the parameter (the mid-quantiles trim the tails
// a little, so it is slightly smaller).
TEST(ExpertPopularity, ProfileCarriesTheRequestedSpread) {
  for (double cv : {0.3, 0.8, 1.167, 2.0}) {
    const auto& w = expert_popularity(4096, cv);
    double var = 0;
    for (double x : w) var += (x - 1.0) * (x - 1.0);
    const double measured = std::sqrt(var / w.size());
    EXPECT_LE(measured, cv + 1e-9) << "cv " << cv;
    EXPECT_GT(measured, 0.93 * cv) << "cv " << cv;
  }
}

TEST(ExpertPopularity, RoutingStatisticsOfKnownProfiles) {
  const auto uniform = routing_statistics(std::vector<double>(128, 1.0));
  EXPECT_NEAR(uniform.concentration, 0.0, 1e-12);
  EXPECT_EQ(uniform.experts_for_coverage, 116);  // ceil(0.9 · 128) = 115.2 → 116
  EXPECT_NEAR(uniform.top_share, 1.0 / 128, 1e-15);
  std::vector<double> one(16, 0.0);
  one[3] = 5.0;
  const auto single = routing_statistics(one);
  EXPECT_NEAR(single.concentration, 1.0, 1e-12);
  EXPECT_EQ(single.experts_for_coverage, 1);
  EXPECT_DOUBLE_EQ(single.top_share, 1.0);
  // Two hot experts of four holding 80%: H = −(2·0.4 ln 0.4 + 2·0.1 ln 0.1).
  const auto two = routing_statistics({4, 1, 4, 1});
  EXPECT_NEAR(two.concentration, 1.0 - -(0.8 * std::log(0.4) + 0.2 * std::log(0.1)) / std::log(4.0), 1e-12);
  EXPECT_EQ(two.experts_for_coverage, 3);
  EXPECT_DOUBLE_EQ(two.top_share, 0.4);
  // Skew raises the concentration and the top share and lowers the experts needed.
  const auto a = routing_statistics(expert_popularity(128, 0.5)), b = routing_statistics(expert_popularity(128, 1.5));
  EXPECT_LT(a.concentration, b.concentration);
  EXPECT_LT(a.top_share, b.top_share);
  EXPECT_GT(a.experts_for_coverage, b.experts_for_coverage);
}

TEST(ExpertPopularity, BadParametersAreErrors) {
  for (double cv : {-0.1, kMaxExpertLoadCv + 0.01, std::nan("")}) {
    const std::string e = error_of([&] { expert_popularity(128, cv); });
    EXPECT_NE(e.find("expert load CV must be in [0, "), std::string::npos) << "cv " << cv << ": " << e;
  }
  for (int E : {0, 5000}) EXPECT_NE(error_of([&] { expert_popularity(E, 1.0); }).find("experts must be in [1, 4096]"),
                                    std::string::npos) << "E " << E;
  EXPECT_NE(error_of([] { routing_statistics({}); }).find("no experts"), std::string::npos);
  EXPECT_NE(error_of([] { routing_statistics({0, 0}); }).find("positive sum"), std::string::npos);
}

// At load CV 0 the skewed sum is the uniform closed form; skew lowers the coverage of every
// forward of more than one token and never that of one token (k experts).
TEST(ExpertPopularity, SkewLowersCoverageAndZeroIsTheClosedForm) {
  for (int B : {1, 2, 8, 32, 128})
    for (double T : {1.0, 4.0, 16.0})
      for (double rho : {0.0, 0.3}) {
        const double uniform = expected_experts_touched(128, 8, B, T, rho, 0.0);
        double previous = uniform;
        for (double cv : {0.5, 1.167, 2.0}) {
          const double skewed = expected_experts_touched(128, 8, B, T, rho, cv);
          if (B * T == 1) {
            EXPECT_NEAR(skewed, 8.0, 1e-9) << "cv " << cv;
          } else {
            EXPECT_LT(skewed, previous) << "B " << B << " T " << T << " rho " << rho << " cv " << cv;
          }
          EXPECT_GE(skewed, 8.0 - 1e-9);
          previous = skewed;
        }
      }
}

// The formula against a simulation of what it models: every token that routes afresh includes
// expert i independently with probability q_i = min(1, k·w_i/E); a later token repeats its
// predecessor's experts with probability rho. Seed 2024.
TEST(ExpertPopularity, CoverageMatchesASimulationOfSkewedRouting) {
  std::mt19937_64 rng(2024);
  struct Case {
    int E, k, B, T;
    double rho, cv;
  };
  for (const Case& c : {Case{128, 8, 8, 1, 0.0, 1.167}, Case{128, 8, 4, 4, 0.0, 1.167}, Case{128, 8, 2, 8, 0.3, 1.167},
                        Case{64, 4, 16, 1, 0.0, 2.0}, Case{256, 8, 32, 1, 0.0, 0.5}}) {
    const auto& w = expert_popularity(c.E, c.cv);
    const int trials = 3000;
    double total = 0;
    std::uniform_real_distribution<double> u(0, 1);
    for (int t = 0; t < trials; ++t) {
      std::vector<char> seen(c.E, 0), current(c.E, 0);
      for (int b = 0; b < c.B; ++b)
        for (int i = 0; i < c.T; ++i) {
          if (i == 0 || u(rng) >= c.rho)
            for (int e = 0; e < c.E; ++e) current[e] = u(rng) < std::min(1.0, c.k * w[e] / c.E);
          for (int e = 0; e < c.E; ++e) seen[e] |= current[e];
        }
      for (char v : seen) total += v;
    }
    const double simulated = total / trials;
    const double formula = expected_experts_touched(c.E, c.k, c.B, c.T, c.rho, c.cv);
    EXPECT_NEAR(formula, simulated, 0.02 * formula)
        << "seed 2024: E " << c.E << " k " << c.k << " B " << c.B << " T " << c.T << " rho " << c.rho << " cv " << c.cv;
  }
}

// The bundled Qwen3-30B-A3B spec's load CV reproduces the routing statistics it cites (its
// expert_load_source): concentration 0.111, 65 of 128 experts for 90% of the mass, top expert 4.3%.
TEST(ExpertPopularity, QwenSpecReproducesThePublishedRoutingStatistics) {
  SpecLibrary lib;
  const ModelShape m = lib.model("qwen3-30b-a3b");
  ASSERT_GT(m.expert_load_cv, 0.0);
  const auto r = routing_statistics(expert_popularity(m.num_experts, m.expert_load_cv));
  EXPECT_NEAR(r.concentration, 0.111, 0.001) << "the fitted measure";
  EXPECT_NEAR(r.experts_for_coverage, 65, 4) << "a check the fit was not tuned to";
  EXPECT_NEAR(r.top_share, 0.043, 0.012) << "a check the fit was not tuned to";
  // What it changes: the experts a plain decode step reads at batch 8 fall by about a fifth.
  const double uniform = expected_experts_touched(128, 8, 8, 1, 0.0, 0.0);
  const double skewed = expected_experts_touched(128, 8, 8, 1, 0.0, m.expert_load_cv);
  EXPECT_NEAR(uniform, 51.62, 0.01);
  EXPECT_NEAR(skewed / uniform, 0.81, 0.02);
}

TEST(ExpertPopularity, SpecFieldErrors) {
  const auto base = nlohmann::json::parse(R"({"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"num_local_experts":8,"num_experts_per_tok":2})");
  EXPECT_DOUBLE_EQ(parse_model_shape(base, "m.json").expert_load_cv, 0.0) << "uniform unless a spec says otherwise";
  auto j = base;
  j["expert_load_cv"] = 1.0;
  EXPECT_NE(error_of([&] { parse_model_shape(j, "m.json"); }).find("'expert_load_cv' needs 'expert_load_source'"),
            std::string::npos);
  j["expert_load_source"] = "a measurement";
  EXPECT_DOUBLE_EQ(parse_model_shape(j, "m.json").expert_load_cv, 1.0);
  for (double bad : {-0.5, 4.5}) {
    j["expert_load_cv"] = bad;
    const std::string e = error_of([&] { parse_model_shape(j, "m.json"); });
    EXPECT_NE(e.find("m.json: 'expert_load_cv' must be a number in [0, 4]"), std::string::npos) << bad << ": " << e;
  }
  auto dense = nlohmann::json::parse(R"({"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
      "num_attention_heads":4,"vocab_size":100,"expert_load_cv":1.0,"expert_load_source":"x"})");
  EXPECT_NE(error_of([&] { parse_model_shape(dense, "d.json"); }).find("d.json: 'expert_load_cv' is given but the model has no experts"),
            std::string::npos);
}

}  // namespace
}  // namespace specdec::sim
