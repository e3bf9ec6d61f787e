// Expected distinct experts a mixture-of-experts forward reads when tokens of one sequence reuse
// their predecessor's experts with probability rho (within-sequence routing locality) and
// sequences route independently.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "simulator/model_shape.hpp"
#include "simulator/operators.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

struct Shape {
  double E, k;
};
const std::vector<Shape> kShapes = {{8, 2}, {32, 4}, {128, 4}, {128, 8}, {256, 8}, {16, 16}};
const std::vector<double> kRhos = {0.0, 0.05, 0.14, 0.3, 0.6, 0.9, 1.0};

TEST(MoeCoverage, OneTokenTouchesExactlyK) {
  for (const auto& s : kShapes)
    for (double rho : kRhos) EXPECT_NEAR(expected_experts_touched(s.E, s.k, 1, 1, rho, 0.0), s.k, 1e-9 * s.k);
}

TEST(MoeCoverage, NoLocalityIsTheUniformFormula) {
  for (const auto& s : kShapes)
    for (int B : {1, 2, 8, 64})
      for (int T : {1, 2, 4, 8, 16, 60, 64}) {
        const double uniform = s.E * (1.0 - std::pow(1.0 - s.k / s.E, double(B) * T));
        EXPECT_NEAR(expected_experts_touched(s.E, s.k, B, T, 0.0, 0.0), uniform, 1e-9 * s.E) << s.E << " " << B << " " << T;
      }
}

TEST(MoeCoverage, BoundedByExpertsAndByTokensTimesK) {
  for (const auto& s : kShapes)
    for (double rho : kRhos)
      for (int B : {1, 3, 8, 64, 512})
        for (int T : {1, 2, 4, 16, 64, 1024}) {
          const double c = expected_experts_touched(s.E, s.k, B, T, rho, 0.0);
          EXPECT_GE(c, std::min(s.k, s.E) - 1e-9);
          EXPECT_LE(c, s.E + 1e-9);
          EXPECT_LE(c, double(B) * T * s.k + 1e-9);
        }
}

TEST(MoeCoverage, MonotoneInTokensAndBatch) {
  for (const auto& s : kShapes)
    for (double rho : kRhos) {
      for (int B : {1, 4, 32}) {
        double prev = 0;
        for (double T = 1; T <= 256; T += 1) {
          const double c = expected_experts_touched(s.E, s.k, B, T, rho, 0.0);
          EXPECT_GE(c, prev - 1e-12) << "tokens " << T;
          prev = c;
        }
      }
      for (int T : {1, 4, 64}) {
        double prev = 0;
        for (int B = 1; B <= 256; ++B) {
          const double c = expected_experts_touched(s.E, s.k, B, T, rho, 0.0);
          EXPECT_GE(c, prev - 1e-12) << "batch " << B;
          prev = c;
        }
      }
    }
}

TEST(MoeCoverage, DecreasesWithLocality) {
  for (const auto& s : kShapes)
    for (int B : {1, 8, 64})
      for (int T : {2, 4, 16, 64}) {
        double prev = s.E + 1;
        for (double rho = 0; rho <= 1.0 + 1e-12; rho += 0.05) {
          const double c = expected_experts_touched(s.E, s.k, B, T, rho, 0.0);
          EXPECT_LE(c, prev + 1e-12);
          prev = c;
        }
        // Strictly fewer than uniform routing wherever uniform routing has not touched them all.
        const double uniform = expected_experts_touched(s.E, s.k, B, T, 0.0, 0.0);
        if (uniform < s.E - 1e-6) EXPECT_LT(expected_experts_touched(s.E, s.k, B, T, 0.14, 0.0), uniform);
        // rho = 1: every sequence keeps its first token's experts.
        EXPECT_NEAR(expected_experts_touched(s.E, s.k, B, T, 1.0, 0.0), expected_experts_touched(s.E, s.k, B, 1, 0.0, 0.0), 1e-9);
      }
}

// The closed form is the exact expectation of the process it describes: check it against a
// simulation of that process (a token repeats its predecessor's k experts with probability rho,
// else draws k distinct experts uniformly; sequences independent).
TEST(MoeCoverage, MatchesASimulationOfTheRoutingProcess) {
  std::mt19937 rng(12345);
  struct Case {
    int E, k, B, T;
    double rho;
  };
  for (const Case& c : {Case{128, 4, 8, 4, 0.14}, Case{128, 8, 1, 64, 0.3}, Case{128, 8, 4, 16, 0.14}, Case{8, 2, 2, 8, 0.5}}) {
    const int trials = 4000;
    double total = 0;
    std::vector<int> experts(c.E);
    for (int t = 0; t < trials; ++t) {
      std::vector<char> seen(c.E, 0);
      for (int b = 0; b < c.B; ++b) {
        std::vector<int> current;
        for (int i = 0; i < c.T; ++i) {
          if (i == 0 || std::uniform_real_distribution<double>(0, 1)(rng) >= c.rho) {
            for (int e = 0; e < c.E; ++e) experts[e] = e;
            std::shuffle(experts.begin(), experts.end(), rng);
            current.assign(experts.begin(), experts.begin() + c.k);
          }
          for (int e : current) seen[e] = 1;
        }
      }
      for (char v : seen) total += v;
    }
    const double simulated = total / trials;
    const double formula = expected_experts_touched(c.E, c.k, c.B, c.T, c.rho, 0.0);
    EXPECT_NEAR(formula, simulated, 0.02 * formula) << c.E << " " << c.k << " " << c.B << " " << c.T << " " << c.rho;
  }
}

// The expert weights a verification reads follow the coverage; a plain decode step (one token per
// sequence) does not depend on the locality.
TEST(MoeCoverage, ExpertBytesOfAForwardFollowTheLocality) {
  SpecLibrary lib;
  ModelShape m = lib.model("qwen3-30b-a3b");
  EXPECT_DOUBLE_EQ(m.expert_locality, kDefaultExpertLocality) << "the spec gives none";
  auto expert_bytes = [&](double rho, double tokens, int batch) {
    ModelShape s = m;
    s.expert_locality = rho;
    ForwardParams p;
    p.tokens = tokens;
    p.batch = batch;
    p.context = 600;
    for (const auto& op : model_forward_ops(s, p, "verify"))
      if (std::string(op.name) == "moe.experts") return op.weight_bytes;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(expert_bytes(0.0, 1, 8), expert_bytes(0.3, 1, 8));
  EXPECT_LT(expert_bytes(0.14, 64, 1), expert_bytes(0.0, 64, 1));
  EXPECT_LT(expert_bytes(0.3, 64, 1), expert_bytes(0.14, 64, 1));
}

TEST(MoeCoverage, SpecFieldDefaultsAndErrors) {
  const auto base = nlohmann::json::parse(R"({"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"num_local_experts":8,"num_experts_per_tok":2})");
  EXPECT_DOUBLE_EQ(parse_model_shape(base, "m.json").expert_locality, kDefaultExpertLocality);
  auto j = base;
  j["expert_locality"] = 0.0;
  EXPECT_DOUBLE_EQ(parse_model_shape(j, "m.json").expert_locality, 0.0);
  j["expert_locality"] = 1.0;
  EXPECT_DOUBLE_EQ(parse_model_shape(j, "m.json").expert_locality, 1.0);

  test::TempDir dir;
  auto load_error = [&](const nlohmann::json& value) {
    auto bad = base;
    bad["expert_locality"] = value;
    const auto path = dir.path() / "bad-moe.json";
    std::ofstream(path) << bad.dump();
    return error_of([&] { load_model_shape(path); });
  };
  for (const auto& v : {nlohmann::json(1.5), nlohmann::json(-0.1)}) {
    const std::string e = load_error(v);
    EXPECT_NE(e.find("bad-moe.json"), std::string::npos) << e;
    EXPECT_NE(e.find("'expert_locality' must be a number in [0, 1]"), std::string::npos) << e;
  }
  const std::string e = load_error("high");
  EXPECT_NE(e.find("bad-moe.json"), std::string::npos) << e;
  EXPECT_NE(e.find("'expert_locality' must be a number"), std::string::npos) << e;
}

}  // namespace
}  // namespace specdec::sim
